//! Authentication: bearer tokens the server issues per [`Identity`], as a real API server's
//! token authenticator maps a ServiceAccount token to a user. The admin (group
//! `system:masters`) is issued a token at start; tests and the lab issue one per component,
//! ServiceAccounts with the `authentication.kubernetes.io/node-name` extra claim for agents.
//! A request without a known token gets 401 `Unauthorized`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, Error};

/// The extra claim a bound ServiceAccount token carries: the node its pod runs on.
pub const NODE_NAME_CLAIM: &str = "authentication.kubernetes.io/node-name";

/// Name of the admin user in the kubeconfig the server writes.
pub const ADMIN_USER: &str = "lab-admin";

/// An authenticated user, as `request.userInfo` shows it to admission policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `system:serviceaccount:<ns>:<name>` for ServiceAccounts.
    pub username: String,
    /// Unique id of the user.
    pub uid: String,
    /// Groups, including `system:authenticated`.
    pub groups: Vec<String>,
    /// Extra claims (`authentication.kubernetes.io/node-name`).
    #[serde(default)]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    /// The cluster admin: in `system:masters`, which RBAC always allows.
    pub fn admin() -> Self {
        Self::user(ADMIN_USER, &["system:masters"])
    }

    /// A plain user (a person) in the given groups.
    pub fn user(name: &str, groups: &[&str]) -> Self {
        let mut g: Vec<String> = groups.iter().map(|s| s.to_string()).collect();
        g.push("system:authenticated".into());
        Self {
            username: name.into(),
            uid: format!("user-{name}"),
            groups: g,
            extra: BTreeMap::new(),
        }
    }

    /// A ServiceAccount, as its token authenticates it.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            username: format!("system:serviceaccount:{namespace}:{name}"),
            uid: format!("sa-{namespace}-{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            extra: BTreeMap::new(),
        }
    }

    /// The same identity with the node-name claim of a pod on `node`.
    pub fn on_node(mut self, node: &str) -> Self {
        self.extra
            .insert(NODE_NAME_CLAIM.into(), vec![node.to_string()]);
        self
    }

    /// Whether RBAC lets it do anything (`system:masters`).
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }

    /// `(namespace, name)` if this is a ServiceAccount.
    pub fn service_account_of(&self) -> Option<(&str, &str)> {
        self.username
            .strip_prefix("system:serviceaccount:")?
            .split_once(':')
    }
}

/// Issued tokens. Cloning shares the table. With a file, tokens survive a restart of a
/// server that persists its objects, so kubeconfigs written earlier keep working.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    table: Arc<Mutex<HashMap<String, Arc<Identity>>>>,
    file: Option<PathBuf>,
}

impl Tokens {
    /// An empty table, kept in `file` if given (loaded from it when it exists).
    pub fn new(file: Option<PathBuf>) -> Result<Self, Error> {
        let mut table = HashMap::new();
        if let Some(path) = &file
            && path.exists()
        {
            let text = std::fs::read_to_string(path).map_err(|source| Error::File {
                path: path.display().to_string(),
                source,
            })?;
            let saved: HashMap<String, Identity> =
                serde_json::from_str(&text).map_err(|e| Error::Data {
                    path: path.display().to_string(),
                    message: format!("not a token table: {e}"),
                })?;
            table.extend(saved.into_iter().map(|(k, v)| (k, Arc::new(v))));
        }
        Ok(Self {
            table: Arc::new(Mutex::new(table)),
            file,
        })
    }

    /// A new random token for `identity`.
    pub fn issue(&self, identity: Identity) -> Result<String, Error> {
        let token = format!(
            "nrlab.{:032x}{:032x}",
            rand::random::<u128>(),
            rand::random::<u128>()
        );
        let mut t = self.table.lock().map_err(|_| Error::Poisoned)?;
        t.insert(token.clone(), Arc::new(identity));
        if let Some(path) = &self.file {
            let plain: HashMap<&String, &Identity> = t.iter().map(|(k, v)| (k, &**v)).collect();
            let text = serde_json::to_string(&plain).unwrap_or_default();
            std::fs::write(path, text).map_err(|source| Error::File {
                path: path.display().to_string(),
                source,
            })?;
        }
        Ok(token)
    }

    /// The identity of an `Authorization` header value, or 401.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Arc<Identity>, ApiError> {
        let unauthorized = || ApiError::new(401, "Unauthorized", "Unauthorized");
        // As kube-apiserver's bearer-token authenticator reads the header: the scheme in any
        // case, one space, the token up to the next space.
        let token = authorization
            .and_then(|h| {
                let mut parts = h.splitn(3, ' ');
                let scheme = parts.next()?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| parts.next())?
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(unauthorized)?;
        let t = self
            .table
            .lock()
            .map_err(|_| ApiError::new(500, "InternalError", "token table lock poisoned"))?;
        t.get(token).cloned().ok_or_else(unauthorized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_issued_tokens_authenticate() {
        let tokens = Tokens::new(None).unwrap();
        let sa = Identity::service_account("ns1", "agent").on_node("n1");
        let t = tokens.issue(sa.clone()).unwrap();
        let got = tokens.authenticate(Some(&format!("Bearer {t}"))).unwrap();
        assert_eq!(*got, sa);
        assert_eq!(got.extra[NODE_NAME_CLAIM], ["n1"]);
        assert_eq!(got.service_account_of(), Some(("ns1", "agent")));
        for bad in [
            None,
            Some("Bearer "),
            Some("Bearer nope"),
            Some(t.as_str()),
            Some(&format!("Basic {t}")),
            Some(&format!("Bearer  {t}")),
            Some(&format!("Bearer{t}")),
        ] {
            assert_eq!(tokens.authenticate(bad).unwrap_err().code, 401, "{bad:?}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case_as_kube_apiserver_does() {
        let tokens = Tokens::new(None).unwrap();
        let t = tokens.issue(Identity::user("u", &[])).unwrap();
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let header = format!("{scheme} {t}");
            let got = tokens.authenticate(Some(&header));
            assert_eq!(got.unwrap().username, "u", "{header}");
        }
    }
}
