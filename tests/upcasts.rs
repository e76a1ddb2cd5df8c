//! Event versions and upcasts: a recording made by version 1 of a workflow reads under today's
//! version after a field rename (`item:added`), a type change through two versions
//! (`payment:taken`: cents, then an amount, then an amount with a currency) and a split
//! (`order:placed` lost its address to `address:given`). `fixtures/orders-v1.jsonl` is what
//! version 1 recorded (`the_fixture_is_what_version_1_records` keeps it honest); today's fold
//! reproduces every state hash version 1 recorded, the log keeps its bytes, today's events
//! record their versions, and an event newer than the code is refused.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::store::MemoryStore;

const FIXTURE: &str = include_str!("fixtures/orders-v1.jsonl");

/// The order, the same shape in both versions (so version 1's state hashes check today's fold).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Order {
    pub customer: String,
    pub address: String,
    pub items: Vec<String>,
    pub paid_cents: u64,
}

/// Version 1 of the workflow, as it was when the fixture was recorded.
pub mod v1 {
    use openharness::prelude::*;

    #[event]
    #[derive(Debug, Clone)]
    pub struct OrderPlaced {
        pub customer: String,
        pub address: String,
    }

    #[event]
    #[derive(Debug, Clone)]
    pub struct ItemAdded {
        pub title: String,
    }

    #[event]
    #[derive(Debug, Clone)]
    pub struct PaymentTaken {
        pub cents: u64,
    }

    #[event]
    pub enum OrderEvent {
        UserInput,
        OrderPlaced,
        ItemAdded,
        PaymentTaken,
    }

    /// The order as version 1 kept it: the same fields as today's, so the same JSON.
    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
    pub struct V1 {
        pub customer: String,
        pub address: String,
        pub items: Vec<String>,
        pub paid_cents: u64,
    }

    #[handler(OrderEvent)]
    impl V1 {
        fn input(&mut self, input: &UserInput) -> Emit {
            let text = input.text.as_str();
            if let Some(rest) = text.strip_prefix("order ") {
                let (customer, address) = rest.split_once(" / ").unwrap_or((rest, ""));
                Emit::one(OrderPlaced {
                    customer: customer.into(),
                    address: address.into(),
                })
            } else if let Some(title) = text.strip_prefix("add ") {
                Emit::one(ItemAdded {
                    title: title.into(),
                })
            } else if let Some(Ok(cents)) = text.strip_prefix("pay ").map(str::parse) {
                Emit::one(PaymentTaken { cents })
            } else {
                Emit::none()
            }
        }
        fn placed(&mut self, order: &OrderPlaced) {
            self.customer.clone_from(&order.customer);
            self.address.clone_from(&order.address);
        }
        fn added(&mut self, item: &ItemAdded) {
            self.items.push(item.title.clone());
        }
        fn paid(&mut self, payment: &PaymentTaken) {
            self.paid_cents += payment.cents;
        }
    }
}

// ---- today's version ------------------------------------------------------------------------

/// Today's order: the address moved to an event of its own.
#[event(version = 2)]
#[derive(Debug, Clone, PartialEq)]
pub struct OrderPlaced {
    pub customer: String,
}

#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct AddressGiven {
    pub address: String,
}

impl Upcast for OrderPlaced {
    type Previous = v1::OrderPlaced;
    fn upcast(old: v1::OrderPlaced) -> Upcasted<Self> {
        Upcasted::from(Self {
            customer: old.customer,
        })
        .and(AddressGiven {
            address: old.address,
        })
    }
}

/// Today's item: `title` renamed `name`.
#[event(version = 2)]
#[derive(Debug, Clone, PartialEq)]
pub struct ItemAdded {
    pub name: String,
}

impl Upcast for ItemAdded {
    type Previous = v1::ItemAdded;
    fn upcast(old: v1::ItemAdded) -> Upcasted<Self> {
        Self { name: old.title }.into()
    }
}

/// Version 2 of `payment:taken`: an amount instead of cents.
#[event("payment:taken", version = 2)]
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentTakenV2 {
    pub amount: f64,
}

impl Upcast for PaymentTakenV2 {
    type Previous = v1::PaymentTaken;
    #[allow(clippy::cast_precision_loss)] // cents of one order fit a float exactly
    fn upcast(old: v1::PaymentTaken) -> Upcasted<Self> {
        Self {
            amount: old.cents as f64 / 100.0,
        }
        .into()
    }
}

/// Today's payment (version 3): with its currency; older ones were all in euros.
#[event(version = 3)]
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentTaken {
    pub amount: f64,
    pub currency: String,
}

impl Upcast for PaymentTaken {
    type Previous = PaymentTakenV2;
    fn upcast(old: PaymentTakenV2) -> Upcasted<Self> {
        Self {
            amount: old.amount,
            currency: "EUR".into(),
        }
        .into()
    }
}

#[event]
pub enum OrderEvent {
    UserInput,
    OrderPlaced,
    AddressGiven,
    ItemAdded,
    PaymentTaken,
}

#[handler(OrderEvent)]
impl Order {
    fn input(&mut self, input: &UserInput) -> Emit {
        let text = input.text.as_str();
        if let Some(rest) = text.strip_prefix("order ") {
            let (customer, address) = rest.split_once(" / ").unwrap_or((rest, ""));
            Emit::one(OrderPlaced {
                customer: customer.into(),
            })
            .and(AddressGiven {
                address: address.into(),
            })
        } else if let Some(name) = text.strip_prefix("add ") {
            Emit::one(ItemAdded { name: name.into() })
        } else if let Some(Ok(cents)) = text.strip_prefix("pay ").map(str::parse::<u32>) {
            Emit::one(PaymentTaken {
                amount: f64::from(cents) / 100.0,
                currency: "EUR".into(),
            })
        } else {
            Emit::none()
        }
    }
    fn placed(&mut self, order: &OrderPlaced) {
        self.customer.clone_from(&order.customer);
    }
    fn addressed(&mut self, address: &AddressGiven) {
        self.address.clone_from(&address.address);
    }
    fn added(&mut self, item: &ItemAdded) {
        self.items.push(item.name.clone());
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // whole cents
    fn paid(&mut self, payment: &PaymentTaken) {
        self.paid_cents += (payment.amount * 100.0).round() as u64;
    }
}

const INPUTS: [&str; 4] = [
    "order ada / 1 Loop Rd",
    "add kettle",
    "add mugs",
    "pay 4250",
];

fn workflow<S: openharness::WorkflowState + Default>(store: &MemoryStore) -> Workflow<S> {
    Workflow::builder("shop")
        .initial_state(S::default())
        .store(store.clone())
        .build()
        .unwrap()
}

async fn record_v1(store: &MemoryStore) -> SessionId {
    let v1 = workflow::<v1::V1>(store);
    let first = v1.run(RunOptions::new().input(INPUTS[0])).await.unwrap();
    for &input in &INPUTS[1..] {
        v1.send(&first.session, input, RunOptions::new())
            .await
            .unwrap();
    }
    first.session
}

async fn imported() -> (MemoryStore, SessionId) {
    let store = MemoryStore::new();
    openharness::store::jsonl::import(&store, FIXTURE.as_bytes())
        .await
        .unwrap();
    let session = store.sessions().await.unwrap().remove(0).id;
    (store, session)
}

fn expected() -> Order {
    Order {
        customer: "ada".into(),
        address: "1 Loop Rd".into(),
        items: vec!["kettle".into(), "mugs".into()],
        paid_cents: 4250,
    }
}

/// What a recording says, without ids and times: (name, payload, version).
async fn shape(store: &MemoryStore, session: &SessionId) -> Vec<(String, serde_json::Value, u32)> {
    store
        .all_events(session)
        .await
        .unwrap()
        .into_iter()
        .map(|event| (event.name.to_string(), event.payload, event.version))
        .collect()
}

#[tokio::test]
async fn the_fixture_is_what_version_1_records() {
    let fresh = MemoryStore::new();
    let session = record_v1(&fresh).await;
    let mut today = shape(&fresh, &session).await;
    let mut then = Vec::new();
    if !FIXTURE.is_empty() {
        let (fixture, recorded) = imported().await;
        then = shape(&fixture, &recorded).await;
    }
    // `workflow:started` carries the code's fingerprint, which this file's edits change.
    today.retain(|(name, ..)| name != WorkflowStarted::NAME);
    then.retain(|(name, ..)| name != WorkflowStarted::NAME);
    if today != then {
        // A fresh recording to copy over the fixture, written where tests may write.
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("orders-v1.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        openharness::store::jsonl::export(&fresh, &session, &mut file)
            .await
            .unwrap();
        panic!(
            "tests/fixtures/orders-v1.jsonl is not what `v1` records: if `v1` is right, copy {} over it",
            path.display()
        );
    }
}

#[tokio::test]
async fn a_version_1_recording_reads_under_today_s_version() {
    let (store, session) = imported().await;
    let today = workflow::<Order>(&store);

    let mut tape = today.load(&session).await.unwrap();
    tape.step_to(tape.len());
    assert_eq!(tape.state(), &expected());
    assert_eq!(tape.skipped().total(), 0, "{:?}", tape.skipped());

    // Every hash version 1 recorded is today's state there: the upcasts read exactly.
    let check = today.check_state(&session).await.unwrap();
    assert!(check.checked >= 4, "{check:?}");
    assert_eq!(check.divergence, None);

    // Reading upcast nothing in the log: it holds what version 1 wrote.
    let (pristine, _) = imported().await;
    assert_eq!(
        shape(&store, &session).await,
        shape(&pristine, &session).await
    );
    assert!(
        !FIXTURE.contains("\"version\""),
        "version 1 writes no version field"
    );
}

/// Today's workflow with a careless upcast of `payment:taken`: cents read as whole euros.
pub mod careless {
    use openharness::prelude::*;

    #[event("payment:taken", version = 2)]
    #[derive(Debug, Clone)]
    pub struct PaymentTaken {
        pub amount: f64,
    }

    impl Upcast for PaymentTaken {
        type Previous = super::v1::PaymentTaken;
        #[allow(clippy::cast_precision_loss)]
        fn upcast(old: super::v1::PaymentTaken) -> Upcasted<Self> {
            Self {
                amount: old.cents as f64,
            }
            .into()
        }
    }

    #[event]
    pub enum CarelessEvent {
        OrderPlaced(super::OrderPlaced),
        AddressGiven(super::AddressGiven),
        ItemAdded(super::ItemAdded),
        PaymentTaken,
    }

    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
    pub struct Careless(super::Order);

    #[handler(CarelessEvent)]
    impl Careless {
        fn placed(&mut self, order: &super::OrderPlaced) {
            self.0.placed(order);
        }
        fn addressed(&mut self, address: &super::AddressGiven) {
            self.0.addressed(address);
        }
        fn added(&mut self, item: &super::ItemAdded) {
            self.0.added(item);
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        fn paid(&mut self, payment: &PaymentTaken) {
            self.0.paid_cents += (payment.amount * 100.0).round() as u64;
        }
    }
}

#[tokio::test]
async fn a_wrong_upcast_is_caught_at_the_event_it_misreads() {
    let (store, session) = imported().await;
    let careless = workflow::<careless::Careless>(&store);
    let check = careless.check_state(&session).await.unwrap();
    let divergence = check.divergence.expect("the careless upcast parts");
    let events = store.all_events(&session).await.unwrap();
    // The first hash recorded at or after the payment: the batch the misread changes.
    let payment = events
        .iter()
        .position(|event| event.name == "payment:taken")
        .unwrap();
    let hashed = payment
        + events[payment..]
            .iter()
            .position(|event| event.state_hash.is_some())
            .unwrap();
    assert_eq!(divergence.seq, hashed as u64, "{divergence:?}");
    assert!(
        divergence
            .changed_by
            .iter()
            .any(|by| by.event == "payment:taken"),
        "{divergence:?}"
    );
}

#[tokio::test]
async fn today_s_events_record_their_versions_beside_version_1_s() {
    let (store, session) = imported().await;
    let today = workflow::<Order>(&store);
    let before = store.all_events(&session).await.unwrap().len();
    today
        .send(&session, "add spoons", RunOptions::new())
        .await
        .unwrap();
    today
        .send(&session, "pay 100", RunOptions::new())
        .await
        .unwrap();
    let events = store.all_events(&session).await.unwrap();
    let new: Vec<_> = events[before..]
        .iter()
        .filter(|event| !event.name.starts_with("user:") && !event.name.starts_with("workflow:"))
        .map(|event| (event.name.to_string(), event.version))
        .collect();
    assert_eq!(
        new,
        [
            ("item:added".to_owned(), 2),
            ("payment:taken".to_owned(), 3)
        ]
    );
    // The version is on the wire only where it is not 1.
    let wire = |name: &str| {
        let event = events[before..].iter().find(|e| e.name == name).unwrap();
        serde_json::to_value(event).unwrap().get("version").cloned()
    };
    assert_eq!(wire("payment:taken"), Some(serde_json::json!(3)));
    assert_eq!(wire("user:input"), None);

    // Old and new versions fold together, and the hashes of both versions check.
    let mut tape = today.load(&session).await.unwrap();
    tape.step_to(tape.len());
    assert_eq!(tape.state().items, ["kettle", "mugs", "spoons"]);
    assert_eq!(tape.state().paid_cents, 4350);
    let check = today.check_state(&session).await.unwrap();
    assert_eq!(check.divergence, None, "{check:?}");

    // And a session exported and imported keeps each event's version.
    let mut exported = Vec::new();
    openharness::store::jsonl::export(&store, &session, &mut exported)
        .await
        .unwrap();
    let copy = MemoryStore::new();
    openharness::store::jsonl::import(&copy, exported.as_slice())
        .await
        .unwrap();
    assert_eq!(shape(&copy, &session).await, shape(&store, &session).await);
}

#[tokio::test]
async fn an_event_newer_than_the_code_is_refused_with_a_clear_error() {
    let (store, session) = imported().await;
    let mut from_the_future = Envelope::new(
        PaymentTaken::NAME,
        serde_json::json!({ "amount": 1.0, "currency": "EUR", "method": "card" }),
        None,
    );
    from_the_future.version = 4;
    let len = store.all_events(&session).await.unwrap().len() as u64;
    store
        .append(&session, &[from_the_future], len)
        .await
        .unwrap();
    let today = workflow::<Order>(&store);

    // Reading names it and says what to do.
    let mut tape = today.load(&session).await.unwrap();
    tape.step_to(tape.len());
    let skipped = tape.skipped();
    assert_eq!(skipped.undecodable, 1, "{skipped:?}");
    let why = &skipped.undecodable_at[0];
    assert_eq!(why.seq, len);
    assert!(
        why.error.contains(
            "`payment:taken` was recorded at version 4, but this code knows it only up to version 3"
        ),
        "{}",
        why.error
    );

    // Continuing the session is refused, and records nothing.
    let refused = today
        .send(&session, "add forks", RunOptions::new())
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("recorded at version 4"),
        "{refused}"
    );
    assert_eq!(
        store.all_events(&session).await.unwrap().len() as u64,
        len + 1
    );
}

/// Today's workflow with a changed handler: items are recorded in capitals.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Shouting(Order);

#[handler(OrderEvent)]
impl Shouting {
    fn input(&mut self, input: &UserInput) -> Emit {
        match input.text.strip_prefix("add ") {
            Some(name) => Emit::one(ItemAdded {
                name: name.to_uppercase(),
            }),
            None => self.0.input(input),
        }
    }
    fn placed(&mut self, order: &OrderPlaced) {
        self.0.placed(order);
    }
    fn addressed(&mut self, address: &AddressGiven) {
        self.0.addressed(address);
    }
    fn added(&mut self, item: &ItemAdded) {
        self.0.added(item);
    }
    fn paid(&mut self, payment: &PaymentTaken) {
        self.0.paid(payment);
    }
}

#[tokio::test]
async fn a_version_1_recording_re_executes_under_today_s_version_as_it_reads() {
    use openharness::tape::{Cassette, TapeError};
    let (store, session) = imported().await;

    // Today's handlers emit today's shapes (the order split in two); the recording, read
    // through its upcasts, has the same events: the re-execution matches.
    let today = workflow::<Order>(&store);
    let cassette = Cassette::load(&today, &session).await.unwrap();
    let outcome = cassette.replay(&today, RunOptions::new()).await.unwrap();
    assert_eq!(outcome.state, expected());

    // A changed handler parts at the recording's own seq of the event it changes (the split
    // before it added an event to the reading, not to the recording).
    let shouting = workflow::<Shouting>(&store);
    let Err(TapeError::Diverged(divergence)) = cassette.replay(&shouting, RunOptions::new()).await
    else {
        panic!("the capitals went unnoticed");
    };
    let events = store.all_events(&session).await.unwrap();
    let first_item = events
        .iter()
        .position(|event| event.name == "item:added")
        .unwrap();
    assert_eq!(divergence.seq, first_item as u64, "{divergence}");
}
