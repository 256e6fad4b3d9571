//! The bundle's pod templates as the lab runs them: what `podman run` gets.

use super::*;
use crate::pods::{agent, configurator};

fn placement(node: &str, ip: [u8; 4]) -> Placement {
    let ip = Ipv4Addr::from(ip);
    Placement {
        container: format!("nrlab-agent-{node}"),
        pod_name: format!("netrollout-agent-{node}"),
        namespace: "netrollout-system".into(),
        node_name: node.into(),
        host_ip: ip,
        pod_ip: ip,
        netns: format!("nrlab-{node}"),
        host_paths: [
            ("/var/lib/netrollout", "/s/nodes/n1"),
            ("/etc/frr", "/etc/frr/nrlab-n1"),
            ("/var/run/frr", "/var/run/frr/nrlab-n1"),
        ]
        .map(|(k, v)| (k.to_string(), PathBuf::from(v)))
        .into(),
        pod_dir: "/s/pods/a".into(),
        service_account: "/s/pods/a/sa".into(),
        api: SocketAddr::from(([10, 77, 0, 1], 6443)),
        overlay: Overlay::default(),
    }
}

/// The value after each occurrence of `flag`.
fn values(args: &[String], flag: &str) -> Vec<String> {
    (args.windows(2))
        .filter(|w| w[0] == flag)
        .map(|w| w[1].clone())
        .collect()
}

#[test]
fn the_agent_runs_with_only_net_admin_a_read_only_root_its_limit_and_the_nodes_directories() {
    let r = run(&agent().unwrap(), &placement("n1", [10, 77, 0, 11])).unwrap();
    assert_eq!(values(&r.args, "--cap-drop"), ["ALL"]);
    assert_eq!(values(&r.args, "--cap-add"), ["NET_ADMIN"]);
    assert!(r.args.contains(&"--read-only".to_string()));
    assert!(r.args.contains(&"--read-only-tmpfs=false".to_string()));
    assert_eq!(values(&r.args, "--security-opt"), ["no-new-privileges"]);
    assert_eq!(values(&r.args, "--user"), ["0"]);
    assert_eq!(r.memory_limit, Some(256 << 20));
    assert_eq!(values(&r.args, "--network"), ["ns:/run/netns/nrlab-n1"]);
    assert_eq!(
        values(&r.args, "--hostname"),
        ["n1"],
        "hostNetwork: the node's name"
    );
    let volumes = values(&r.args, "--volume");
    for v in [
        "/s/nodes/n1:/var/lib/netrollout",
        "/etc/frr/nrlab-n1:/etc/frr",
        "/var/run/frr/nrlab-n1:/var/run/frr",
        "/s/pods/a/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro",
    ] {
        assert!(volumes.contains(&v.to_string()), "{v} in {volumes:?}");
    }
    assert!(
        r.create.contains(&PathBuf::from("/s/nodes/n1")),
        "DirectoryOrCreate"
    );
}

#[test]
fn field_references_and_their_expansion_in_args_come_from_the_node() {
    let r = run(&agent().unwrap(), &placement("n1", [10, 77, 0, 11])).unwrap();
    let env = values(&r.args, "--env");
    for e in [
        "NODE_NAME=n1",
        "VTEP_IP=10.77.0.11",
        "HOST_IP=10.77.0.11",
        "KUBERNETES_SERVICE_HOST=10.77.0.1",
        "KUBERNETES_SERVICE_PORT=6443",
    ] {
        assert!(env.contains(&e.to_string()), "{e} in {env:?}");
    }
    let image = r
        .args
        .iter()
        .position(|a| a.contains("/netrollout-agent:"))
        .unwrap();
    assert!(
        r.args[image + 1..].contains(&"--metrics-addr=10.77.0.11:9101".to_string()),
        "{:?}",
        &r.args[image..]
    );
}

#[test]
fn probes_are_the_bundles_on_the_pods_address_with_named_ports_resolved() {
    let r = run(&agent().unwrap(), &placement("n1", [10, 77, 0, 11])).unwrap();
    let live = r.liveness.unwrap();
    assert_eq!(live.to_string(), "http://10.77.0.11:9101/healthz");
    assert_eq!(
        (live.initial_delay, live.period, live.failure_threshold),
        (Duration::from_secs(5), Duration::from_secs(10), 3)
    );
    let ready = r.readiness.unwrap();
    assert_eq!(ready.to_string(), "http://10.77.0.11:9101/readyz");
    assert_eq!(
        (ready.period, ready.timeout),
        (Duration::from_secs(5), Duration::from_secs(1))
    );
}

#[test]
fn the_configurator_runs_as_its_user_with_no_capability_and_the_labs_flags_laid_over() {
    let mut p = placement("n1", [10, 77, 0, 201]);
    p.container = "nrlab-configurator-0".into();
    p.pod_name = "configurator-0".into();
    p.overlay.flags = vec![
        ("--update-limit".into(), "2".into()),
        ("--guard".into(), "off".into()),
    ];
    let r = run(&configurator().unwrap(), &p).unwrap();
    assert_eq!(values(&r.args, "--user"), ["65532:65532"]);
    assert_eq!(values(&r.args, "--cap-drop"), ["ALL"]);
    assert!(values(&r.args, "--cap-add").is_empty());
    assert_eq!(values(&r.args, "--hostname"), ["configurator-0"]);
    let image = r
        .args
        .iter()
        .position(|a| a.contains("/netrollout-configurator:"))
        .unwrap();
    let args = &r.args[image + 1..];
    assert!(args.contains(&"--update-limit=2".to_string()), "{args:?}");
    assert!(!args.contains(&"--update-limit=1".to_string()), "{args:?}");
    assert!(args.contains(&"--guard=off".to_string()), "added: {args:?}");
    assert!(
        args.contains(&"--lease-namespace=netrollout-system".to_string()),
        "$(POD_NAMESPACE) expanded: {args:?}"
    );
    assert_eq!(r.memory_limit, Some(512 << 20));
    assert_eq!(
        r.liveness.unwrap().to_string(),
        "http://10.77.0.201:8081/healthz"
    );
}

#[test]
fn a_hostpath_the_lab_has_no_directory_for_is_refused_by_name() {
    let mut p = placement("n1", [10, 77, 0, 11]);
    p.host_paths.remove("/etc/frr");
    let e = run(&agent().unwrap(), &p).unwrap_err().to_string();
    assert!(e.contains("frr-config") && e.contains("/etc/frr"), "{e}");
}

#[test]
fn a_field_reference_the_lab_cannot_give_is_refused_by_name() {
    let mut t = agent().unwrap();
    let env = t.spec.containers[0].env.as_mut().unwrap();
    env[0]
        .value_from
        .as_mut()
        .unwrap()
        .field_ref
        .as_mut()
        .unwrap()
        .field_path = "spec.serviceAccountName".into();
    let e = run(&t, &placement("n1", [10, 77, 0, 11]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("env[NODE_NAME]") && e.contains("spec.serviceAccountName"),
        "{e}"
    );
}

#[test]
fn run_as_non_root_with_user_zero_is_refused_as_the_kubelet_refuses_it() {
    let mut t = configurator().unwrap();
    t.spec.security_context.as_mut().unwrap().run_as_user = Some(0);
    let e = run(&t, &placement("n1", [10, 77, 0, 11]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("runAsNonRoot"), "{e}");
}

#[test]
fn expansion_follows_the_kubelets_rules() {
    let env = vec![
        ("A".to_string(), "1".to_string()),
        ("B".to_string(), "x".to_string()),
    ];
    assert_eq!(expand("$(A):$(B)", &env), "1:x");
    assert_eq!(expand("$(C)", &env), "$(C)", "unknown names stay");
    assert_eq!(expand("$$(A)", &env), "$(A)", "escaped");
    assert_eq!(expand("a$b", &env), "a$b");
}

#[test]
fn quantities() {
    assert_eq!(quantity("256Mi").unwrap(), 256 << 20);
    assert_eq!(quantity("1G").unwrap(), 1_000_000_000);
    assert_eq!(quantity("4096").unwrap(), 4096);
    assert!(quantity("1.5Gi").is_err());
}
