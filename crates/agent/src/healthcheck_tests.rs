use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_go_operators_format_loads_with_its_side_files() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "taints.yaml",
        "- node.kubernetes.io/not-ready\n",
    );
    let p = write(
        dir.path(),
        "hc.yaml",
        "interfaces: [lo]\nreachability:\n  - host: localhost\n    port: 8080\n  - host: 10.0.0.1\n    protocol: icmp\n    vrf: vr.m2m\ntaints: [inline]\ntaintsFile: taints.yaml\ntimeout: 5s\nretries: 3\n",
    );
    let hc = HealthCheck::load(&p).unwrap();
    assert_eq!(hc.interfaces, ["lo"]);
    assert_eq!(hc.taints, ["inline", "node.kubernetes.io/not-ready"]);
    assert_eq!(hc.timeout, Some(Duration::from_secs(5)));
    assert_eq!(hc.reachability[1].protocol, Protocol::Icmp);
    assert_eq!(hc.reachability[1].vrf.as_deref(), Some("vr.m2m"));
}

#[test]
fn bad_input_names_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "hc.yaml",
        "reachability:\n  - host: a.example\n",
    );
    let e = HealthCheck::load(&p).unwrap_err().to_string();
    assert!(
        e.contains("hc.yaml") && e.contains("reachability[0].port"),
        "{e}"
    );
    let p = write(
        dir.path(),
        "hc.yaml",
        "reachability:\n  - host: db\n    protocol: icmp\n",
    );
    let e = HealthCheck::load(&p).unwrap_err().to_string();
    assert!(e.contains("needs an address"), "{e}");
    let p = write(dir.path(), "hc.yaml", "interfacez: [lo]\n");
    let e = HealthCheck::load(&p).unwrap_err().to_string();
    assert!(e.contains("interfacez"), "{e}");
}

#[test]
fn patterns_glob() {
    assert!(matches("l2.*", "l2.600"));
    assert!(matches("*", "eth0"));
    assert!(matches("vr.*-x", "vr.m2m-x"));
    assert!(!matches("l2.*", "lx.600"));
    assert!(!matches("eth0", "eth01"));
}

#[tokio::test]
async fn interface_patterns_check_operstate() {
    let sys = tempfile::tempdir().unwrap();
    for (n, s) in [("l2.1", "up"), ("l2.2", "down"), ("lo", "unknown")] {
        std::fs::create_dir(sys.path().join(n)).unwrap();
        write(&sys.path().join(n), "operstate", s);
    }
    let out = interfaces_up(&["lo".into(), "l2.*".into(), "vx.*".into()], sys.path());
    assert!(out[0].passed());
    assert_eq!(out[1].error.as_deref(), Some("l2.2 is down"));
    assert_eq!(out[2].error.as_deref(), Some("no interface matches"));
}

/// Needs CAP_NET_RAW (root, as CI runs); fails loudly without.
#[tokio::test]
async fn icmp_checks_bind_to_the_named_device() {
    let check = |vrf: &str| Reachability {
        host: "127.0.0.1".into(),
        port: 0,
        protocol: Protocol::Icmp,
        vrf: Some(vrf.into()),
    };
    let o = check("lo").probe(Duration::from_secs(1)).await;
    assert!(o.passed(), "{o:?}");
    assert_eq!(o.name, "icmp 127.0.0.1 via lo");
    let o = check("nr-no-such-dev").probe(Duration::from_secs(1)).await;
    assert!(
        o.error
            .as_deref()
            .is_some_and(|e| e.contains("binding to nr-no-such-dev")),
        "{o:?}"
    );
}

#[tokio::test]
async fn tcp_checks_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let r = Reachability {
        host: "127.0.0.1".into(),
        port,
        protocol: Protocol::Tcp,
        vrf: None,
    };
    assert!(r.probe(Duration::from_secs(1)).await.passed());
    drop(listener);
    let o = r.probe(Duration::from_secs(1)).await;
    assert!(!o.passed(), "{o:?}");
}

#[tokio::test]
async fn a_skipped_check_is_not_run_and_the_others_are() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tcp = |port| Reachability {
        host: "127.0.0.1".into(),
        port,
        protocol: Protocol::Tcp,
        vrf: None,
    };
    let hc = HealthCheck {
        interfaces: vec!["lo".into()],
        reachability: vec![tcp(port), tcp(1)],
        taints: Vec::new(),
        timeout: None,
    };
    let all = hc.run(Duration::from_secs(1)).await;
    let names = |o: &[Outcome]| o.iter().map(|o| o.name.clone()).collect::<Vec<_>>();
    let skipped = format!("tcp 127.0.0.1:{port}");
    assert!(names(&all).contains(&skipped), "{all:?}");
    let rest = hc
        .run_except(Duration::from_secs(1), std::slice::from_ref(&skipped))
        .await;
    assert!(!names(&rest).contains(&skipped), "{rest:?}");
    assert!(
        names(&rest).contains(&"tcp 127.0.0.1:1".to_string()),
        "{rest:?}"
    );
    assert!(names(&rest).iter().any(|n| n.contains("lo")), "{rest:?}");
}
