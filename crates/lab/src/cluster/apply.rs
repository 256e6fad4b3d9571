//! Applying and deleting the lab's inputs (VRF, Layer2, RoutingTable, BGPPeering), one revision per set in
//! VM mode.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::json;

use super::{Cluster, NAMESPACE};

mod settled;

use settled::Applied;

/// How long the configurator may take to write `Accepted` on every object of a set applied in
/// VM mode before [`Cluster::apply`] gives up (and unpauses anyway).
pub const ACCEPT_TIMEOUT: Duration = Duration::from_secs(60);
/// How often [`Cluster::apply`] reads the objects back while it waits.
const ACCEPT_POLL: Duration = Duration::from_millis(200);

impl Cluster {
    /// Applies input objects (VRF, Layer2, RoutingTable, BGPPeering) with server-side apply. In
    /// VM mode a set of objects goes out as one revision: the rollout is paused (the control
    /// ConfigMap) while they are applied and until the configurator has judged every one of
    /// them at the generation applied (each object's `Accepted` condition observes it, and the
    /// accepted ones name one revision), so no node gets a revision with only some of them (a
    /// VRF's routing config without its networks), which the slow VM would spend minutes on.
    /// The rollout is unpaused on every path, a failure included; past [`ACCEPT_TIMEOUT`] the
    /// error names the objects the configurator has not judged.
    pub async fn apply(&self, objects: &[DynamicObject]) -> Result<()> {
        let pause = self.vm.is_some() && objects.len() > 1;
        if !pause {
            self.apply_each(objects).await?;
            return Ok(());
        }
        self.set_paused(true).await?;
        let outcome = match self.apply_each(objects).await {
            Ok(applied) => self.wait_accepted(&applied, ACCEPT_TIMEOUT).await,
            Err(e) => Err(e),
        };
        let unpaused = self.set_paused(false).await;
        outcome?;
        unpaused
    }

    /// Waits until the configurator has judged every applied object at the generation applied
    /// ([`settled::pending`] names what it still waits for).
    async fn wait_accepted(&self, applied: &[Applied], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut seen = Vec::with_capacity(applied.len());
            for a in applied {
                let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &a.resource);
                let obj = api
                    .get(&a.name)
                    .await
                    .with_context(|| format!("reading {} {} back", a.resource.kind, a.name))?;
                seen.push(obj);
            }
            let pending = settled::pending(applied, &seen);
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "the configurator did not judge the applied set within {timeout:?} (the \
                     rollout was paused meanwhile and is unpaused now): {}; the configurators' \
                     logs in {} say why",
                    pending.join("; "),
                    self.opts.state_dir.join("logs").display()
                );
            }
            tokio::time::sleep(ACCEPT_POLL).await;
        }
    }

    async fn set_paused(&self, paused: bool) -> Result<()> {
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        let name = netrollout_api::CONTROL_CONFIGMAP;
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {netrollout_api::CONTROL_PAUSED_KEY: paused.to_string()},
        });
        cms.patch(
            name,
            &PatchParams::apply("netrollout-lab").force(),
            &Patch::Apply(&cm),
        )
        .await
        .with_context(|| format!("setting paused={paused} in ConfigMap {name}"))?;
        Ok(())
    }

    /// Applies every object, after a dry run of every object: one the API server refuses (a
    /// schema or CEL rule) stops the set before anything of it is stored. Returns each
    /// object's generation as stored.
    async fn apply_each(&self, objects: &[DynamicObject]) -> Result<Vec<Applied>> {
        let pp = PatchParams::apply("netrollout-lab").force();
        let dry = PatchParams {
            dry_run: true,
            ..pp.clone()
        };
        let mut applied = Vec::with_capacity(objects.len());
        for params in [&dry, &pp] {
            for obj in objects {
                let ar = api_resource(obj)?;
                let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
                let name = obj.metadata.name.clone().unwrap_or_default();
                let stored = api
                    .patch(&name, params, &Patch::Apply(obj))
                    .await
                    .with_context(|| format!("applying {} {name}", ar.kind))?;
                if !params.dry_run {
                    applied.push(Applied {
                        generation: stored.metadata.generation,
                        resource: ar,
                        name,
                    });
                }
            }
        }
        Ok(applied)
    }

    /// Deletes input objects.
    pub async fn delete(&self, objects: &[DynamicObject]) -> Result<()> {
        for obj in objects {
            let ar = api_resource(obj)?;
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
            let name = obj.metadata.name.clone().unwrap_or_default();
            api.delete(&name, &Default::default())
                .await
                .with_context(|| format!("deleting {} {name}", ar.kind))?;
        }
        Ok(())
    }
}

fn api_resource(obj: &DynamicObject) -> Result<ApiResource> {
    let types = obj
        .types
        .as_ref()
        .context("object without apiVersion/kind")?;
    let plural = match types.kind.as_str() {
        "VRFRouteConfiguration" => "vrfrouteconfigurations",
        "Layer2NetworkConfiguration" => "layer2networkconfigurations",
        "RoutingTable" => "routingtables",
        "BGPPeering" => "bgppeerings",
        other => bail!("the lab applies only netrollout.io inputs, not {other}"),
    };
    let gvk = kube::core::GroupVersionKind::try_from(types)?;
    Ok(ApiResource::from_gvk_with_plural(&gvk, plural))
}
