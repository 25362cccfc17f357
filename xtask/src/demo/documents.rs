//! What the demo's user says: the decisions of a design (part 1), stated plainly so that
//! the demo can look for them after each compaction ([`super::evidence::FACTS`]), then
//! requests for paragraphs of the design. Every message is well within its share of the
//! demo's window.

/// One step of the demo: how it is shown, and the message pith is given.
pub struct Step {
    /// The short form printed after `$ pith run … "`.
    pub shown: &'static str,
    /// The whole message.
    pub prompt: &'static str,
}

/// The demo's steps, in order: the decisions, then fifteen more parts of the design, which
/// (with the model's short acknowledgements) fill the window, so pith compacts at least
/// twice (parts 15 and 16 are margin for a machine whose model answers shorter); the
/// closing question about part 1 comes after them ([`QUESTION`]). Each message stays well
/// within its share of the window.
pub const STEPS: &[Step] = &[
    Step {
        shown: "Part 1 of the event store design: the decisions…",
        prompt: "Part 1 of the event store design, the decisions:\n\
- We chose SQLite in WAL mode because the team already operates it and backups are a single file.\n\
- Raw events are kept for 90 days.\n\
- Writers authenticate with mutual TLS.\n\
Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 2: the event schema…",
        prompt: "Part 2 of the design: the event schema. Every event is a row with five columns: a sequence number assigned by the store, the stream it belongs to, a kind string such as order.placed, a schema version, and the payload as compact JSON. Sequence numbers are dense within a stream, so a consumer that sees a gap knows it missed something and asks again from the last number it holds. Kind strings are registered in the schema repository before the first producer ships. Versions only grow: a producer that changes the meaning of a field publishes a new version. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 3: replay…",
        prompt: "Part 3 of the design: replay. Replay starts from the newest snapshot of a stream and applies the events recorded after it. A snapshot is written every ten thousand events or once an hour, whichever comes first, by a background worker that never blocks producers. Snapshots carry the sequence number they end at and a checksum; a replay that finds a bad checksum falls back to the previous snapshot and reports the damage to the on-call channel. Consumers must be idempotent: delivery is at least once. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 4: failover…",
        prompt: "Part 4 of the design: failover. The store runs on two hosts in each region: a primary that takes writes and a standby that follows its log with a delay of under a second. Failover is manual on purpose; the runbook asks the on-call engineer to confirm that the primary is really gone, to promote the standby with one command, and to point the producers at it. A drill is held on the first Tuesday of every quarter, and its timing is recorded next to the previous ones. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 5: monitoring…",
        prompt: "Part 5 of the design: monitoring. Every write path exports a latency histogram and an error counter. Alerts fire when the 99th percentile of write latency stays above fifty milliseconds for five minutes, when the standby falls more than ten seconds behind, and when a disk is more than eighty percent full. Dashboards show the write rate per stream, the age of the newest snapshot, and the consumers that are more than an hour behind. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 6: capacity…",
        prompt: "Part 6 of the design: capacity. Capacity is reviewed every month against the forecast from sales. The current hosts have room for four times today's load, and the plan is to add a third region before next year's peak season. Frank will estimate the cost of the third region, with and without a standby in it, and Eve will draft the retirement notice for the old message queue. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 7: action items…",
        prompt: "Part 7: the review's action items. Alice will measure how long a checkpoint of the log takes under the nightly import. Bob will time a snapshot restore onto a fresh host on the staging cluster. Chen will set up the check that refuses a producer whose kind is not registered. Dana will review the gateway's token lifetimes with the security team. The next review is in two weeks. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 8: deleting data…",
        prompt: "Part 8 of the design: deleting a customer's data. A deletion request names a customer; a job finds every stream that carries the customer's id, writes a tombstone event into each, and rewrites the snapshots that still hold the customer's fields. The job reports what it changed to the privacy team, and a second job checks a week later that no payload still mentions the id. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 9: upgrades…",
        prompt: "Part 9 of the design: upgrades. The store is upgraded one host at a time: the standby first, then a planned failover, then the old primary. Every upgrade is rehearsed on the staging cluster with a copy of last night's snapshot, and the release notes of the storage library are read by two people before the date is set. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 10: onboarding…",
        prompt: "Part 10 of the design: onboarding. A new engineer spends the first week on the runbooks: they restore a snapshot, run a failover drill on staging, and add a made-up event kind through the schema repository. A buddy from the team reviews each step, and the engineer joins the on-call rotation after their second month. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 11: schema changes…",
        prompt: "Part 11 of the design: changing a schema. A producer team that needs a new field writes a short proposal, adds the new version to the schema repository, and ships consumers that read both versions before any producer writes the new one. Old versions are kept readable for a year. A field is never renamed: a new field is added and the old one is left empty. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 12: testing…",
        prompt: "Part 12 of the design: testing. Every producer has a contract test that publishes each of its event kinds to a throwaway store and checks that the registered consumers read them. The nightly build replays a day of anonymised production events into the staging cluster and compares the consumers' results with the day before. A failure blocks the release until someone on the team has looked at it. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 13: cost…",
        prompt: "Part 13 of the design: cost. Storage is the largest line of the bill, then the network between regions, then the hosts themselves. Payloads are compressed before they are written, which halved the disk used in the trial. The finance team receives a monthly report of cost per stream, and a stream whose cost doubles in a month is flagged to its owners. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 14: documentation…",
        prompt: "Part 14 of the design: documentation. The design lives next to the code, and a change to the store is not merged until the pages it affects are updated in the same review. Every runbook names its owner and the date it was last followed for real. Once a year the team reads all of them aloud in one afternoon and deletes what nobody could explain. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 15: incident reviews…",
        prompt: "Part 15 of the design: incident reviews. Every page that woke someone up gets a written review within five working days, without blame, naming what happened, what helped and what the team changes. The reviews are read together on the first Monday of each month, and an action from one stays open until its owner shows that it was done. Acknowledge in one short sentence.",
    },
    Step {
        shown: "Part 16: the roadmap…",
        prompt: "Part 16 of the design: the roadmap. The first quarter moves the two largest producers onto the store, the second adds the analytics consumers, and the third retires the old message queue once nothing has read from it for a month. Each step has a date to go back if the numbers look wrong. Acknowledge in one short sentence.",
    },
];

/// The closing question, about part 1.
pub const QUESTION: &str =
    "Which storage engine did we choose in part 1, and why? Answer in one sentence.";
