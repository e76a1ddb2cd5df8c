//! `openharness check`: a healthy store says every session is ok; a damaged store file is
//! reported (exit 1) or read, and never crashes the command; no command on a damaged file
//! prints a raw panic, and none that met damage exits 0.
#![allow(clippy::unwrap_used, missing_docs)]

mod binary;
use binary::openharness;
use openharness_testkit::random::SplitMix;

#[test]
fn check_reports_healthy_and_damaged_stores_without_crashing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    assert!(openharness(dir.path(), &["demo", "chat"]).status.success());
    let healthy = openharness(dir.path(), &["check"]);
    let stdout = String::from_utf8_lossy(&healthy.stdout);
    assert!(healthy.status.success(), "{stdout}");
    assert_eq!(
        stdout.matches("\nok ").count() + usize::from(stdout.starts_with("ok ")),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("2 session(s) checked, 0 damaged"),
        "{stdout}"
    );

    // Damage copies of the file in many places: every run answers (ok or damaged), none crashes.
    let original = std::fs::read(dir.path().join(".openharness/store.redb")).unwrap();
    let mut reported = 0;
    for seed in 0..12u64 {
        let mut bytes = original.clone();
        let mut random = SplitMix::new(seed);
        for _ in 0..64 {
            let at = random.pick(bytes.len());
            bytes[at] ^= 0xa5;
        }
        let copy = dir.path().join(format!("damaged-{seed}.redb"));
        std::fs::write(&copy, &bytes).unwrap();
        let output = openharness(dir.path(), &["check", "--store", copy.to_str().unwrap()]);
        let code = output.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "seed {seed}: exit {code:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        if code == Some(1) {
            reported += 1;
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(
                printed.contains("DAMAGED")
                    || printed.contains("damaged")
                    || printed.contains("error:"),
                "seed {seed}: {printed}"
            );
        }
    }
    assert!(
        reported > 0,
        "64 flipped bytes per copy damage at least one of 12 copies"
    );
}

/// `bytes` damaged the `kind`-th way (bytes flipped, a page zeroed, the file cut short, a
/// page copied over another), chosen by `seed`.
fn damaged(bytes: &[u8], kind: u64, seed: u64) -> Vec<u8> {
    const PAGE: usize = 4096;
    let mut bytes = bytes.to_vec();
    let mut random = SplitMix::new(seed);
    let mut next = move || random.next_u64() as usize;
    let pages = bytes.len() / PAGE;
    match kind % 4 {
        0 => {
            for _ in 0..16 {
                let at = next() % bytes.len();
                bytes[at] ^= 0x5a;
            }
        }
        1 if pages > 1 => {
            let page = next() % pages;
            bytes[page * PAGE..(page + 1) * PAGE].fill(0);
        }
        2 => bytes.truncate(next() % bytes.len()),
        _ if pages > 1 => {
            let (from, to) = (next() % pages, next() % pages);
            let copy = bytes[from * PAGE..(from + 1) * PAGE].to_vec();
            bytes[to * PAGE..(to + 1) * PAGE].copy_from_slice(&copy);
        }
        _ => bytes.truncate(bytes.len() / 2),
    }
    bytes
}

#[test]
fn commands_on_damaged_files_print_no_raw_panic() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let listed = openharness(dir.path(), &["sessions", "--json"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    let session = text
        .split('"')
        .find(|part| part.len() == 36 && part.matches('-').count() == 4)
        .unwrap_or_else(|| panic!("no session id in {text}"))
        .to_owned();
    let original = std::fs::read(dir.path().join(".openharness/store.redb")).unwrap();
    let mut commands = 0;
    let mut damage_reported = 0;
    for seed in 0..120u64 {
        let copy = dir.path().join(format!("damaged-{seed}.redb"));
        std::fs::write(&copy, damaged(&original, seed, seed + 1)).unwrap();
        let store = copy.to_str().unwrap();
        for args in [
            vec!["--store", store, "sessions"],
            vec!["--store", store, "events", &session],
            vec!["--store", store, "check"],
        ] {
            commands += 1;
            let output = openharness(dir.path(), &args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            // A typed error or an answer: never redb's raw panic text, never a crash.
            assert!(
                !stderr.contains("panicked at") && !stderr.contains("RUST_BACKTRACE"),
                "seed {seed}, {args:?}: {stderr}"
            );
            assert!(
                matches!(output.status.code(), Some(0..=2)),
                "seed {seed}, {args:?}: exit {:?}: {stderr}",
                output.status.code()
            );
            // Damage a command ran into is never passed over with success: an answer that
            // exits 0 met no damaged record, and says nothing about damage.
            let lower = stderr.to_lowercase();
            if lower.contains("damaged") || lower.contains("corrupt") {
                assert_ne!(
                    output.status.code(),
                    Some(0),
                    "seed {seed}, {args:?}: damage reported, exit 0: {stderr}"
                );
                damage_reported += 1;
            }
        }
    }
    assert_eq!(commands, 360);
    assert!(
        damage_reported >= 120,
        "most damaged copies are found damaged by some command: {damage_reported}"
    );
}
