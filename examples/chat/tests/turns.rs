//! One chat session grown over three turns: every turn continues the same log, the final
//! state is a fold of the whole log, and the tape steps back across turn boundaries.
#![allow(clippy::unwrap_used)]

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::tape::LoadTape;
use openharness_example_chat::{self as chat, AssistantReplied};

#[tokio::test]
async fn three_turns_grow_one_session_and_its_tape_steps_back_across_them() {
    let store = MemoryStore::new();
    let workflow = chat::workflow(store.clone(), chat::scripted_provider()).unwrap();
    let [first_message, second_message, third_message] = chat::DEMO_MESSAGES;

    let first = workflow
        .run(RunOptions::new().input(first_message))
        .await
        .unwrap();
    assert_eq!(first.reason, StopReason::Idle);
    let second = workflow
        .send(&first.session, second_message, RunOptions::new())
        .await
        .unwrap();
    let third = workflow
        .send(&first.session, third_message, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(second.session, first.session);
    assert_eq!(third.session, first.session);
    assert_eq!(second.first_seq, first.len);
    assert_eq!(third.first_seq, second.len);
    assert!(third.len > second.len && second.len > first.len);
    assert_eq!(store.sessions().await.unwrap().len(), 1, "one session");

    // The conversation, in order, each answer seeing the messages before it.
    let state = &third.state;
    let users: Vec<&str> = state.exchanges.iter().map(|e| e.user.as_str()).collect();
    assert_eq!(users, chat::DEMO_MESSAGES);
    for (n, exchange) in state.exchanges.iter().enumerate() {
        let reply = exchange.reply.as_deref().unwrap();
        assert!(reply.contains(&exchange.user), "{reply}");
        assert!(
            reply.contains(&format!("message {} of", n + 1)),
            "answer {n} saw the earlier messages: {reply}"
        );
    }

    // The final state is a fold of the whole log.
    let mut tape = workflow.load(&third.session).await.unwrap();
    assert_eq!(tape.len(), third.len);
    assert_eq!(&tape.state_at(tape.len()), state);
    assert_eq!(&workflow.fold(tape.events()), state);
    let replies = tape
        .events()
        .iter()
        .filter(|e| e.name == AssistantReplied::NAME)
        .count();
    assert_eq!(replies, 3);
    let started = tape
        .events()
        .iter()
        .filter(|e| e.name == "workflow:started")
        .count();
    assert_eq!(started, 1, "later turns record no workflow:started");

    // Step back from the end to just before the third turn's `user:input`: two exchanges.
    tape.step_to(tape.len());
    let third_input = tape.find_name_back(UserInput::NAME).unwrap();
    assert_eq!(
        tape.current().unwrap().decode::<UserInput>().unwrap().text,
        third_message
    );
    assert_eq!(
        third_input - 1,
        second.len,
        "the third turn begins with its input"
    );
    assert_eq!(tape.step_back(), third_input - 1);
    assert_eq!(tape.state().exchanges.len(), 2);
    assert_eq!(tape.state(), &second.state);
    assert_eq!(tape.state().exchanges[1].user, second_message);
    // Across the first turn boundary too: before the second input, one exchange.
    tape.find_name_back(UserInput::NAME).unwrap();
    tape.step_back();
    assert_eq!(tape.state(), &first.state);
    assert_eq!(tape.state().exchanges.len(), 1);
    // The store derives the same states at those positions.
    assert_eq!(
        workflow
            .state_at(&third.session, third_input - 1)
            .await
            .unwrap(),
        second.state
    );
}
