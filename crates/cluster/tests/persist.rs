//! Saving and loading: a state reads back equal, a save replaces the old
//! file whole, and a damaged or foreign file is a clear error.

mod common;

use common::{Op, name, settled_cluster};
use eddy_cluster::{ClusterState, PersistError};

fn busy_state() -> ClusterState {
    let mut sim = settled_cluster(5, 4, 32);
    sim.apply(&Op::Join { joiner: 4, via: 0 }).unwrap();
    sim.apply(&Op::SetProps {
        by: 1,
        bucket: 2,
        value: 5,
    })
    .unwrap();
    sim.apply(&Op::ResetProps { by: 2, bucket: 1 }).unwrap();
    sim.apply(&Op::SetType { by: 3, value: 2 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Complete { k: 3 }).unwrap();
    sim.sync();
    sim.states[0].clone()
}

#[test]
fn a_saved_state_loads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta/cluster.json");
    assert!(ClusterState::load(&path).unwrap().is_none(), "no file yet");
    let state = busy_state();
    assert!(!state.ring().is_settled() && !state.transfers_done().is_empty());
    state.save(&path).unwrap();
    let loaded = ClusterState::load(&path).unwrap().unwrap();
    assert_eq!(loaded, state);
    assert_eq!(loaded.digest(), state.digest());
}

#[test]
fn a_save_replaces_the_previous_file_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.json");
    let mut sim = settled_cluster(2, 2, 16);
    sim.states[0].save(&path).unwrap();
    sim.apply(&Op::Leave { by: 0, node: 1 }).unwrap();
    sim.states[0].save(&path).unwrap();
    let loaded = ClusterState::load(&path).unwrap().unwrap();
    assert_eq!(loaded, sim.states[0]);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("cluster.json")]);
}

fn corrupt_reason(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.json");
    std::fs::write(&path, text).unwrap();
    match ClusterState::load(&path) {
        Err(PersistError::Corrupt { path: p, reason }) => {
            assert_eq!(p, path);
            reason
        }
        other => panic!("expected a corrupt-file error, got {other:?}"),
    }
}

#[test]
fn damaged_or_foreign_files_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.json");
    busy_state().save(&path).unwrap();
    let good = std::fs::read_to_string(&path).unwrap();

    assert!(
        !corrupt_reason(&good[..good.len() / 2]).is_empty(),
        "truncated"
    );
    assert!(!corrupt_reason("{}").is_empty(), "not a state");
    let future = good.replacen("\"format\": 1", "\"format\": 2", 1);
    assert!(corrupt_reason(&future).contains("format 2"));
    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut value: serde_json::Value = serde_json::from_str(&good).unwrap();
        edit(&mut value["state"]["ring"]);
        corrupt_reason(&value.to_string())
    };
    let stranger = edited(&|ring| ring["ring"]["owners"][0] = "stranger@127.0.0.1".into());
    assert_eq!(
        stranger,
        "the ring names stranger@127.0.0.1, which is not a member"
    );
    let removed = edited(&|ring| {
        ring["members"].as_object_mut().unwrap().remove(&name(3).0);
    });
    assert!(removed.contains("not a member"), "{removed}");
    let unplanned = edited(&|ring| ring["planned_at"] = serde_json::json!({}));
    assert!(unplanned.contains("planning epochs"), "{unplanned}");
    // A ring whose size is not a power of two is refused by the ring.
    let short = edited(&|ring| {
        ring["ring"]["owners"].as_array_mut().unwrap().pop();
    });
    assert!(
        short.contains("ring_size") || short.contains("entries"),
        "{short}"
    );
}

#[test]
fn an_unreadable_path_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = ClusterState::load(dir.path()).unwrap_err();
    assert!(matches!(err, PersistError::Io { .. }), "{err:?}");
}
