//! Checks of whole sessions: clearing, independence, and unfinished marks.

use openharness_core::{SessionId, Store};

use super::helpers::*;

/// `clear` removes a session's events, metadata and id index, and nothing else; the session
/// can then start again at seq 0, even with the same events.
pub async fn clear_removes_everything<S: Store>(store: S) {
    let (gone, kept) = (SessionId::new(), SessionId::new());
    let events = batch(3);
    append_ok(&store, &gone, &events, 0).await;
    append_ok(&store, &kept, &batch(2), 0).await;

    if let Err(err) = store.clear(&gone).await {
        panic!("clearing a session failed: {err}");
    }
    assert!(all(&store, &gone).await.is_empty(), "events survived clear");
    assert!(
        info(&store, &gone).await.is_none(),
        "metadata survived clear"
    );
    let listed: Vec<SessionId> = list(&store).await.into_iter().map(|i| i.id).collect();
    assert_eq!(listed, vec![kept.clone()], "sessions after clear");
    assert_eq!(
        all(&store, &kept).await.len(),
        2,
        "clear touched another session"
    );

    let stale = store.append(&gone, &batch(1), 3).await;
    assert_conflict(stale, &gone, 3, 0, "append at the old length after clear");
    // Had the id index survived, this would look like a retry and store nothing.
    assert_eq!(
        append_ok(&store, &gone, &events, 0).await,
        3,
        "re-append after clear"
    );
    assert_eq!(
        all(&store, &gone).await,
        events,
        "events re-appended after clear"
    );
    assert_eq!(info(&store, &gone).await.map(|i| i.count), Some(3));
}

/// Sessions do not share seqs or ids: the same event may be stored in two sessions (as a fork
/// copies its parent's events), and a conflict in one leaves the other alone.
pub async fn sessions_are_independent<S: Store>(store: S) {
    let (one, two) = (SessionId::new(), SessionId::new());
    let shared = batch(2);
    append_ok(&store, &one, &shared, 0).await;
    assert_eq!(
        append_ok(&store, &two, &shared, 0).await,
        2,
        "the same events in a second session"
    );
    append_ok(&store, &one, &batch(1), 2).await;
    let conflict = store.append(&two, &batch(1), 3).await;
    assert_conflict(conflict, &two, 3, 2, "the second session's own length");
    assert_eq!(all(&store, &one).await.len(), 3);
    assert_eq!(all(&store, &two).await, shared);
}

/// Marks of unfinished sessions: set, replaced, listed in session id order, cleared; they
/// never change a session's events or metadata, and clearing a session leaves its mark (the
/// writer that set it clears it).
pub async fn unfinished_marks_are_kept_apart<S: Store>(store: S) {
    assert!(store.unfinished().await.expect("unfinished").is_empty());
    let (one, two) = (SessionId::new(), SessionId::new());
    let events = batch(2);
    append_ok(&store, &one, &events, 0).await;
    for (session, note) in [(&two, "importing: 0 of 9"), (&one, "importing: 1 of 9")] {
        store
            .mark_unfinished(session, Some(note))
            .await
            .expect("a mark is set");
    }
    store
        .mark_unfinished(&one, Some("importing: 2 of 9"))
        .await
        .expect("a mark is replaced");
    let mut expected = vec![
        (one.clone(), "importing: 2 of 9".to_owned()),
        (two.clone(), "importing: 0 of 9".to_owned()),
    ];
    expected.sort();
    assert_eq!(store.unfinished().await.expect("unfinished"), expected);
    assert_eq!(all(&store, &one).await, events, "a mark changes no event");
    assert_eq!(info(&store, &one).await.map(|i| i.count), Some(2));
    assert!(
        info(&store, &two).await.is_none(),
        "a mark makes no session"
    );

    store.clear(&one).await.expect("clear");
    assert_eq!(store.unfinished().await.expect("unfinished").len(), 2);
    for session in [&one, &two, &two] {
        store
            .mark_unfinished(session, None)
            .await
            .expect("a mark is cleared, even twice");
    }
    assert!(store.unfinished().await.expect("unfinished").is_empty());
}
