//! Applying and deleting the lab's inputs (VRF, Layer2, RoutingTable, BGPPeering), one revision per set in
//! VM mode.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::json;

use super::{Cluster, NAMESPACE};

impl Cluster {
    /// Applies input objects (VRF, Layer2, RoutingTable, BGPPeering) with server-side apply. In VM mode a
    /// set of objects goes out as one revision: the rollout is paused (the control ConfigMap)
    /// while they are applied, so no node gets a revision with only some of them (a VRF's
    /// routing config without its networks), which the slow VM would spend minutes on.
    pub async fn apply(&self, objects: &[DynamicObject]) -> Result<()> {
        let pause = self.vm.is_some() && objects.len() > 1;
        if pause {
            self.set_paused(true).await?;
        }
        self.apply_each(objects).await?;
        if pause {
            tokio::time::sleep(Duration::from_millis(500)).await;
            self.set_paused(false).await?;
        }
        Ok(())
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
    /// schema or CEL rule) stops the set before anything of it is stored.
    async fn apply_each(&self, objects: &[DynamicObject]) -> Result<()> {
        let pp = PatchParams::apply("netrollout-lab").force();
        let dry = PatchParams {
            dry_run: true,
            ..pp.clone()
        };
        for params in [&dry, &pp] {
            for obj in objects {
                let ar = api_resource(obj)?;
                let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
                let name = obj.metadata.name.clone().unwrap_or_default();
                api.patch(&name, params, &Patch::Apply(obj))
                    .await
                    .with_context(|| format!("applying {} {name}", ar.kind))?;
            }
        }
        Ok(())
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
