use super::*;
use crate::protocol::effect::FileAction;

/// A read as the tests compare it: path, line range, partial.
type ReadView = (String, Option<(u64, u64)>, bool);

fn reads(command: &str) -> Vec<ReadView> {
    file_effects(command)
        .reads
        .into_iter()
        .map(|r| (r.path, r.lines, r.partial))
        .collect()
}

fn writes(command: &str) -> Vec<(String, FileAction)> {
    file_effects(command)
        .writes
        .into_iter()
        .map(|w| (w.path, w.action))
        .collect()
}

fn whole(path: &str) -> (String, Option<(u64, u64)>, bool) {
    (path.to_owned(), None, false)
}

#[test]
fn views_are_reads_with_the_lines_they_print() {
    assert_eq!(reads("cat src/a.py"), vec![whole("src/a.py")]);
    assert_eq!(
        reads("cat -n a.py b.py"),
        vec![whole("a.py"), whole("b.py")]
    );
    assert_eq!(
        reads("sed -n '10,40p' src/a.py"),
        vec![("src/a.py".into(), Some((10, 40)), false)]
    );
    assert_eq!(
        reads("nl -ba django/db/models.py | sed -n '540,555p'"),
        vec![("django/db/models.py".into(), Some((540, 555)), false)]
    );
    assert_eq!(
        reads("head -n 5 a.py"),
        vec![("a.py".into(), Some((1, 5)), false)]
    );
    assert_eq!(
        reads("cat a.py | head -20"),
        vec![("a.py".into(), Some((1, 20)), false)]
    );
    assert_eq!(reads("tail -n 20 a.py"), vec![("a.py".into(), None, true)]);
    assert_eq!(
        reads("cat a.py | grep foo"),
        vec![("a.py".into(), None, true)]
    );
    assert_eq!(
        reads("grep -n foo a.py"),
        vec![],
        "a search is not a read of the file"
    );
    assert_eq!(reads("cat a.py > b.py"), vec![], "a copy is not a read");
    assert_eq!(
        reads("cd tests && cat ../src/a.py"),
        vec![whole("src/a.py")]
    );
    assert_eq!(reads("cat *.py"), vec![], "globs name unknown files");
}

#[test]
fn write_forms_are_recognised() {
    use FileAction::*;
    assert_eq!(
        writes("echo hi > out.txt"),
        vec![("out.txt".into(), Written)]
    );
    assert_eq!(
        writes("python run.py 2>&1 >> log.txt"),
        vec![("log.txt".into(), Written)]
    );
    assert_eq!(
        writes("make &> build.log"),
        vec![("build.log".into(), Written)]
    );
    assert_eq!(writes("ls > /dev/null 2>&1"), vec![]);
    assert_eq!(
        writes("sed -i 's/a/b/' src/x.py src/y.py"),
        vec![("src/x.py".into(), Edited), ("src/y.py".into(), Edited)]
    );
    assert_eq!(
        writes("sed -i.bak -e 's/a/b/' x.py"),
        vec![("x.py".into(), Edited)]
    );
    assert_eq!(
        writes("echo x | tee -a notes.md"),
        vec![("notes.md".into(), Written)]
    );
    assert_eq!(
        writes("mv a.py b.py"),
        vec![("a.py".into(), Deleted), ("b.py".into(), Written)]
    );
    assert_eq!(writes("cp -r a.py b.py"), vec![("b.py".into(), Written)]);
    assert_eq!(
        writes("rm -f reproduce.py test_x.py"),
        vec![
            ("reproduce.py".into(), Deleted),
            ("test_x.py".into(), Deleted)
        ]
    );
    assert_eq!(
        writes("git checkout django/db/x.py"),
        vec![("django/db/x.py".into(), Changed)]
    );
    assert_eq!(writes("git checkout main"), vec![]);
    assert_eq!(
        writes("ed src/m.py <<EOF\n1d\nw\nq\nEOF"),
        vec![("src/m.py".into(), Edited)]
    );
    assert_eq!(
        writes("patch a.py a.py.patch"),
        vec![("a.py".into(), Edited)]
    );
    assert_eq!(
        writes("cd sub && echo x > ../top.txt"),
        vec![("top.txt".into(), Written)]
    );
    assert_eq!(writes("echo $X > $OUT"), vec![]);
}

#[test]
fn heredoc_bodies_are_input_not_commands() {
    use FileAction::*;
    let command =
        "cat <<'EOF' > reproduce.py\nimport os\nrm -rf /\ncat secret.txt\nEOF\npython reproduce.py";
    assert_eq!(writes(command), vec![("reproduce.py".into(), Written)]);
    assert_eq!(reads(command), vec![]);
    let tabs = "cat <<-EOF > a.txt\n\tbody\n\tEOF\ncat a.txt";
    assert_eq!(writes(tabs), vec![("a.txt".into(), Written)]);
    assert_eq!(reads(tabs), vec![whole("a.txt")]);
}

#[test]
fn inline_python_writes_are_seen() {
    let command = "python3 - <<'EOF'\npath = 'tests/constraints/tests.py'\nwith open(path, 'r') as f:\n    text = f.read()\nwith open(path, 'w') as f:\n    f.write(text)\nopen(\"log.txt\", mode=\"a\").write('x')\nfrom pathlib import Path\nPath('gen.py').write_text('x')\nEOF";
    assert_eq!(
        writes(command),
        vec![
            ("tests/constraints/tests.py".into(), FileAction::Written),
            ("log.txt".into(), FileAction::Written),
            ("gen.py".into(), FileAction::Written),
        ]
    );
    assert_eq!(
        writes("python -c \"open('x.txt', 'w').write('1')\""),
        vec![("x.txt".into(), FileAction::Written)]
    );
    assert_eq!(writes("python -c \"print(open('x.txt').read())\""), vec![]);
}

#[test]
fn hostile_or_broken_lines_never_panic() {
    for line in [
        "",
        "'unterminated",
        "\"unterminated \\",
        "cat <<EOF",
        "$(((",
        "a >",
        "| | ;; && >& <<< ((",
        "echo `x",
        "2>",
        "cat <(ls) > >(tee x)",
    ] {
        let _ = file_effects(line);
    }
    let long = "cat a.py | ".repeat(2_000);
    let _ = file_effects(&long);
}

#[test]
fn paths_are_normalised() {
    assert_eq!(normalise("./a/./b/../c.py"), "a/c.py");
    assert_eq!(normalise("../x"), "../x");
    assert_eq!(normalise("/a/../../b"), "/b");
}
