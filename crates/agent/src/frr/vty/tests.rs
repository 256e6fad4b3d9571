//! The protocol's framing against a socket pair (the daemons' side: `tests/it/frr_vty.rs`).

use super::*;

/// Writes `parts` one at a time (each its own read on the other side) and closes.
async fn daemon(mut end: UnixStream, parts: Vec<Vec<u8>>) {
    for p in parts {
        end.write_all(&p).await.unwrap();
        end.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn answers_split_anywhere_and_sent_back_to_back_are_read_one_by_one() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let parts = vec![
        b"frr version 8.4\n".to_vec(),
        b"!\n\0".to_vec(),
        b"\0".to_vec(),
        b"\0\0second".to_vec(),
        b"\n\0\0\0\x01".to_vec(),
    ];
    let talk = tokio::spawn(daemon(theirs, parts));
    let mut buf = Vec::new();
    assert_eq!(
        answer(&mut ours, &mut buf).await.unwrap(),
        ("frr version 8.4\n!\n".to_string(), 0)
    );
    assert_eq!(
        answer(&mut ours, &mut buf).await.unwrap(),
        ("second\n".to_string(), 1)
    );
    assert!(buf.is_empty());
    talk.await.unwrap();
}

#[tokio::test]
async fn an_answer_cut_short_or_ended_outside_the_protocol_is_an_error() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let talk = tokio::spawn(daemon(theirs, vec![b"half an answer\0\0".to_vec()]));
    let e = answer(&mut ours, &mut Vec::new()).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
    talk.await.unwrap();

    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let talk = tokio::spawn(daemon(theirs, vec![b"text\0x\0\0".to_vec()]));
    let e = answer(&mut ours, &mut Vec::new()).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    talk.await.unwrap();
}

#[tokio::test]
async fn ask_sends_each_command_ended_by_a_nul_and_a_failed_status_names_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zebra.vty");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let serve = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        while got.iter().filter(|&&b| b == 0).count() < 2 {
            let mut chunk = [0u8; 64];
            let n = s.read(&mut chunk).await.unwrap();
            got.extend_from_slice(&chunk[..n]);
        }
        s.write_all(b"\0\0\0\0% Unknown command\n\0\0\0\x02")
            .await
            .unwrap();
        got
    });
    let Err(Failure::Unusable(why)) = ask("zebra", &path, &["enable", "do write terminal"]).await
    else {
        panic!("a failed status is no answer");
    };
    assert_eq!(
        why,
        "zebra answered `do write terminal` with status 2: % Unknown command"
    );
    assert_eq!(serve.await.unwrap(), b"enable\0do write terminal\0");

    // Nobody listening: the daemon is down, named with its socket.
    std::fs::remove_file(&path).unwrap();
    let Err(Failure::Down(what)) = ask("zebra", &path, &["enable"]).await else {
        panic!("no socket is a daemon down");
    };
    assert!(
        what.starts_with("zebra: connecting to ") && what.contains("zebra.vty"),
        "{what}"
    );
}

#[test]
fn frr_8_4_and_10_3_texts_are_joined_here_another_version_or_a_mix_goes_to_vtysh() {
    let text = |v: &str| format!("frr version {v}\nfrr defaults datacenter\n!\n");
    let one = |v: &str| version_of(&[("zebra", text(v)), ("bgpd", text(v))]);
    for v in ["8.4", "8.4.4", "8.4.7-dev"] {
        assert_eq!(one(v), Ok((v.to_string(), Dialect::V8_4)), "{v}");
    }
    for v in ["10.3", "10.3.1"] {
        assert_eq!(one(v), Ok((v.to_string(), Dialect::V10_3)), "{v}");
    }
    assert_eq!(
        one("9.1"),
        Err(
            "the daemons run FRR 9.1, and the agent joins the daemons' configs by the vtysh \
             rules of FRR 8.4 and 10.3 only"
                .into()
        )
    );
    for v in ["8.40", "10.30", "10.2"] {
        assert!(one(v).is_err(), "{v}");
    }
    assert!(version_of(&[("zebra", "no version line\n".into())]).is_err());
    assert_eq!(
        version_of(&[("mgmtd", text("10.3")), ("zebra", text("8.4.4"))]),
        Err("mgmtd runs FRR 10.3 and zebra FRR 8.4.4".into())
    );
}
