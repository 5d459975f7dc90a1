//! The cluster admin subcommands of `eddy admin`, as `riak admin` names
//! them: `cluster …` (staged membership changes and their plan),
//! `member-status`, `ring-status`, `ringready`, `transfers`,
//! `transfer-limit` and `down`.

use clap::Subcommand;

/// `eddy admin cluster …`, as `riak admin cluster`: changes are staged,
/// shown by `plan` and carried out by `commit`.
#[derive(Debug, Subcommand)]
pub enum ClusterAction {
    /// Join this node to the cluster containing NODE.
    Join {
        /// A member of the cluster to join (name@host).
        node: String,
        /// Where NODE's cluster listener is (host:port); default: NODE's
        /// host, port 8099.
        #[arg(long)]
        address: Option<String>,
    },
    /// Have NODE (default: this node) hand off its data and leave.
    Leave { node: Option<String> },
    /// Remove NODE without first handing off its data (its replicas are
    /// lost): for crashed, unrecoverable nodes.
    #[command(name = "force-remove")]
    ForceRemove { node: String },
    /// Have NODE1 hand all its data to the joining NODE2, then leave.
    Replace { node1: String, node2: String },
    /// Give NODE1's partitions to the joining NODE2 without handoff, and
    /// remove NODE1 (its replicas are lost).
    #[command(name = "force-replace")]
    ForceReplace { node1: String, node2: String },
    /// Show the staged changes and what committing them would do.
    Plan,
    /// Carry out the staged changes.
    Commit,
    /// Drop the staged changes (and joins not committed).
    Clear,
    /// Show the members, their status, liveness and ring share.
    Status,
}

/// The cluster views and settings beside `cluster` in `eddy admin`.
#[derive(Debug, Subcommand)]
pub enum ClusterView {
    /// Show each member's status and ring share, now and once pending
    /// transfers finish.
    #[command(name = "member-status")]
    MemberStatus,
    /// Show the claimant, ownership handoffs pending and unreachable
    /// members.
    #[command(name = "ring-status")]
    RingStatus,
    /// Check that every member is up and agrees on the ring.
    Ringready,
    /// Show the handoffs waiting on each node.
    Transfers,
    /// Show this node's transfer limit, or set it: `transfer-limit LIMIT`
    /// on every member, `transfer-limit NODE LIMIT` on one.
    #[command(name = "transfer-limit")]
    TransferLimit {
        /// `[NODE] LIMIT`
        #[arg(num_args = 0..=2, value_name = "[NODE] LIMIT")]
        args: Vec<String>,
    },
    /// Mark an unreachable NODE down, so cluster changes stop waiting for
    /// it.
    Down { node: String },
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::{AdminAction, AdminArgs, Cli, Command};
    use super::*;

    fn admin(args: &[&str]) -> Result<AdminAction, clap::Error> {
        let argv = ["eddy", "admin"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Admin(AdminArgs { action, .. }) => Ok(action),
            other => panic!("not an admin command: {other:?}"),
        }
    }

    #[test]
    fn cluster_commands_parse() {
        let a = admin(&["cluster", "join", "dev1@h", "--address", "h:10019"]).unwrap();
        assert!(matches!(
            a,
            AdminAction::Cluster(ClusterAction::Join { node, address: Some(addr) })
                if node == "dev1@h" && addr == "h:10019"
        ));
        let a = admin(&["cluster", "leave"]).unwrap();
        assert!(matches!(
            a,
            AdminAction::Cluster(ClusterAction::Leave { node: None })
        ));
        let a = admin(&["cluster", "force-replace", "a@h", "b@h"]).unwrap();
        assert!(matches!(
            a,
            AdminAction::Cluster(ClusterAction::ForceReplace { node1, node2 })
                if node1 == "a@h" && node2 == "b@h"
        ));
        for cmd in ["plan", "commit", "clear", "status"] {
            assert!(admin(&["cluster", cmd]).is_ok(), "{cmd}");
        }
        assert!(admin(&["cluster", "replace", "a@h"]).is_err());
        assert!(admin(&["cluster", "force-remove"]).is_err());
        assert!(admin(&["cluster", "join"]).is_err());
    }

    #[test]
    fn views_parse_beside_cluster_with_the_config_option() {
        let cli =
            Cli::try_parse_from(["eddy", "admin", "--config", "d.toml", "member-status"]).unwrap();
        let Command::Admin(AdminArgs { config, action }) = cli.command else {
            panic!("not admin");
        };
        assert!(config.config.is_some());
        assert!(matches!(
            action,
            AdminAction::View(ClusterView::MemberStatus)
        ));
        let cli = Cli::try_parse_from(["eddy", "admin", "cluster", "plan", "--config", "d.toml"])
            .unwrap();
        let Command::Admin(AdminArgs { config, .. }) = cli.command else {
            panic!("not admin");
        };
        assert_eq!(
            config.config.as_deref(),
            Some(std::path::Path::new("d.toml"))
        );
        for view in ["ring-status", "ringready", "transfers"] {
            assert!(matches!(admin(&[view]), Ok(AdminAction::View(_))), "{view}");
        }
        let limit = |args: &[&str]| match admin(args) {
            Ok(AdminAction::View(ClusterView::TransferLimit { args })) => Ok(args),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(limit(&["transfer-limit"]).unwrap(), Vec::<String>::new());
        assert_eq!(limit(&["transfer-limit", "4"]).unwrap(), ["4"]);
        assert_eq!(
            limit(&["transfer-limit", "a@h", "4"]).unwrap(),
            ["a@h", "4"]
        );
        assert!(limit(&["transfer-limit", "a", "b", "c"]).is_err());
        assert!(matches!(
            admin(&["down", "a@h"]),
            Ok(AdminAction::View(ClusterView::Down { node })) if node == "a@h"
        ));
        assert!(admin(&["down"]).is_err());
    }
}
