//! Strongly connected components of a directed graph (Tarjan's algorithm, iterative so a
//! deep graph cannot overflow the stack): every component of more than one node is an
//! import cycle.

/// The components of the graph on `0..nodes` with the `edges`, that have more than one
/// node or a node with an edge to itself; each sorted, and the list sorted.
pub fn cycles(nodes: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for &(from, to) in edges {
        next[from].push(to);
    }
    let mut tarjan = Tarjan {
        next: &next,
        index: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        counter: 0,
        components: Vec::new(),
    };
    for node in 0..nodes {
        if tarjan.index[node].is_none() {
            tarjan.visit(node);
        }
    }
    let mut found: Vec<Vec<usize>> = tarjan
        .components
        .into_iter()
        .filter(|c| c.len() > 1 || next[c[0]].contains(&c[0]))
        .map(|mut c| {
            c.sort_unstable();
            c
        })
        .collect();
    found.sort();
    found
}

struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    /// Visits `root` and everything reachable from it not yet visited.
    fn visit(&mut self, root: usize) {
        // (node, how many of its successors were looked at)
        let mut work = vec![(root, 0usize)];
        self.open(root);
        while let Some(&mut (node, ref mut seen)) = work.last_mut() {
            if let Some(&succ) = self.next[node].get(*seen) {
                *seen += 1;
                match self.index[succ] {
                    None => {
                        self.open(succ);
                        work.push((succ, 0));
                    }
                    Some(index) if self.on_stack[succ] => {
                        self.low[node] = self.low[node].min(index);
                    }
                    Some(_) => {}
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                self.low[parent] = self.low[parent].min(self.low[node]);
            }
            if Some(self.low[node]) == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }

    fn open(&mut self, node: usize) {
        self.index[node] = Some(self.counter);
        self.low[node] = self.counter;
        self.counter += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::cycles;

    #[test]
    fn a_chain_has_no_cycle() {
        assert!(cycles(4, &[(0, 1), (1, 2), (2, 3)]).is_empty());
    }

    #[test]
    fn two_cycles_and_a_bridge_are_found_apart() {
        let edges = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 3), (5, 5)];
        assert_eq!(cycles(6, &edges), vec![vec![0, 1, 2], vec![3, 4], vec![5]]);
    }

    #[test]
    fn a_long_cycle_does_not_overflow_the_stack() {
        let n = 200_000;
        let edges: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
        assert_eq!(cycles(n, &edges)[0].len(), n);
    }
}
