//! Red team, identities: every identity the bundle knows (agent A and agent B, each on its own
//! node; the configurator; an operator; a user with no role; ServiceAccounts named like the
//! configurator's and the agent's in another namespace; a forged token) against every verb and
//! kind that matters, with the RBAC roles and admission policies of `deploy/netrollout.yaml`.
//! Each case lists who may do it; everyone else must be refused (401 or 403). The garbage
//! collector back door is tried end to end in `redteam_gc.rs`.

mod cases;

use crate::common;

use cases::{Case, cases};
use common::cluster::{Cluster, identity};
use common::raw;
use serde_json::Value;

/// Everyone but the forged token (tried separately on every case).
const WHO: [&str; 7] = [
    "agent-a",
    "agent-b",
    "configurator",
    "olga",
    "nobody",
    "evil-configurator",
    "evil-agent",
];

/// The HTTP status `who` gets for `c`: 200 for any success, else the error's code.
async fn attempt(cluster: &Cluster, who: &str, c: &Case) -> u16 {
    let client = cluster.server.client_for(identity(who)).unwrap();
    let body = if c.body.is_null() {
        vec![]
    } else {
        serde_json::to_vec(&c.body).unwrap()
    };
    let req = http::Request::builder()
        .method(c.method)
        .uri(&c.path)
        .header("Content-Type", c.content_type)
        .body(body)
        .unwrap();
    match client.request_text(req).await {
        Ok(_) => 200,
        Err(kube::Error::Api(e)) => e.code,
        Err(e) => panic!("{}: {who}: {e}", c.what),
    }
}

fn uid_of(v: &str) -> String {
    serde_json::from_str::<Value>(v).unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn every_identity_may_do_exactly_what_its_role_and_the_policies_allow() {
    let c = Cluster::start().await;
    let node_a_uid = uid_of(
        &c.admin(&["get", "node", "node-a", "-o", "json"], None)
            .await
            .ok()
            .stdout,
    );
    let default_uid = uid_of(
        &c.admin(&["get", "namespace", "default", "-o", "json"], None)
            .await
            .ok()
            .stdout,
    );
    let table = cases(&node_a_uid, &default_uid);
    assert!(table.len() >= 40, "{} cases", table.len());
    let mut wrong = vec![];
    for case in &table {
        let forged = raw::request(
            c.server.addr(),
            case.method,
            &case.path,
            &[
                ("Authorization", "Bearer nrlab.forged"),
                ("Content-Type", case.content_type),
            ],
            case.body.to_string().as_bytes(),
        )
        .await;
        if forged.code != 401 {
            wrong.push(format!("{}: a forged token got {}", case.what, forged.code));
        }
        // Those refused first, so that an allowed write (a delete) cannot hide a refusal.
        let (allowed, refused): (Vec<&str>, Vec<&str>) =
            WHO.iter().partition(|w| case.allowed.contains(w));
        for who in refused {
            let code = attempt(&c, who, case).await;
            if code != 403 {
                wrong.push(format!(
                    "{}: {who} got {code}, must be refused (403)",
                    case.what
                ));
            }
        }
        for who in allowed {
            let code = attempt(&c, who, case).await;
            if !(200..300).contains(&code) {
                wrong.push(format!("{}: {who} got {code}, must be allowed", case.what));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong answers:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
