//! The ledger's handlers, each with one planted bug. Every variant is its own state type whose
//! JSON is the fixed [`Ledger`]'s (`#[serde(transparent)]`), so the state hashes of a session
//! recorded by the fixed code are comparable; each takes the fixed handlers but the one it
//! changes, written out here so that the changed line is plain to see.

use openharness::prelude::*;
use serde::{Deserialize, Serialize};

use crate::ledger::{Ledger, LedgerEvent, OrderLine, OrderPlaced, PointsEarned, RefundIssued};

/// A refund counted in whole units instead of cents: the same events, another state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Arithmetic(pub Ledger);

#[handler(LedgerEvent)]
impl Arithmetic {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.0.input(input)
    }
    fn placed(&mut self, order: &OrderPlaced) -> Emit {
        self.0.placed(order)
    }
    fn earned(&mut self, earned: &PointsEarned) {
        self.0.earned(earned);
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.0.refunded_cents += refund.cents * 100; // the bug: was `refund.cents`
        self.0.refunds.push(refund.sku.clone());
    }
}

/// An order's handler that no longer emits its follow-up `points:earned`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DroppedEvent(pub Ledger);

#[handler(LedgerEvent)]
impl DroppedEvent {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.0.input(input)
    }
    fn placed(&mut self, order: &OrderPlaced) -> Emit {
        self.0.orders.push(OrderLine::of(order));
        self.0.gross_cents += self.0.gross(order);
        Emit::none() // the bug: was `Emit::one(PointsEarned::for_order(order))`
    }
    fn earned(&mut self, earned: &PointsEarned) {
        self.0.earned(earned);
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.0.refunded(refund);
    }
}

/// Each order put at the front of the list instead of the back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReorderedList(pub Ledger);

#[handler(LedgerEvent)]
impl ReorderedList {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.0.input(input)
    }
    fn placed(&mut self, order: &OrderPlaced) -> Emit {
        self.0.orders.insert(0, OrderLine::of(order)); // the bug: was `push`
        self.0.gross_cents += self.0.gross(order);
        Emit::one(PointsEarned::for_order(order))
    }
    fn earned(&mut self, earned: &PointsEarned) {
        self.0.earned(earned);
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.0.refunded(refund);
    }
}

/// The ledger's `Default` with another VAT rate: every handler is the fixed one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChangedDefault(pub Ledger);

impl Default for ChangedDefault {
    fn default() -> Self {
        Self(Ledger {
            vat_percent: 19, // the bug: was `VAT_PERCENT` (20)
            ..Ledger::default()
        })
    }
}

#[handler(LedgerEvent)]
impl ChangedDefault {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.0.input(input)
    }
    fn placed(&mut self, order: &OrderPlaced) -> Emit {
        self.0.placed(order)
    }
    fn earned(&mut self, earned: &PointsEarned) {
        self.0.earned(earned);
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.0.refunded(refund);
    }
}

/// `order:placed`'s `quantity` renamed `qty`, with `#[serde(default)]` and no upcaster: an
/// old payload still decodes, to a quantity of 0.
pub mod renamed {
    use openharness::prelude::*;
    use serde::{Deserialize, Serialize};

    use crate::ledger::{self, Command, Ledger, PointsEarned, RefundIssued, parse};

    /// An order was placed (today's shape of `order:placed`).
    #[event]
    #[derive(Debug, Clone, PartialEq)]
    pub struct OrderPlaced {
        /// What was ordered.
        pub sku: String,
        /// How many: the bug, this field was `quantity`.
        #[serde(default)]
        pub qty: u64,
        /// The price of one, in cents, without VAT.
        pub unit_cents: u64,
    }

    /// The ledger's events with today's `order:placed`.
    #[event]
    pub enum LedgerEvent {
        /// A command.
        UserInput,
        /// See [`OrderPlaced`].
        OrderPlaced,
        /// See [`PointsEarned`].
        PointsEarned,
        /// See [`RefundIssued`].
        RefundIssued,
    }

    /// The fixed handlers, over the renamed event.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(transparent)]
    pub struct RenamedField(pub Ledger);

    impl OrderPlaced {
        /// The order as the rest of the ledger knows it.
        fn as_fixed(&self) -> ledger::OrderPlaced {
            ledger::OrderPlaced {
                sku: self.sku.clone(),
                quantity: self.qty,
                unit_cents: self.unit_cents,
            }
        }
    }

    #[handler(LedgerEvent)]
    impl RenamedField {
        fn input(&mut self, input: &UserInput) -> Emit {
            match parse(&input.text) {
                Some(Command::Order(order)) => Emit::one(OrderPlaced {
                    sku: order.sku,
                    qty: order.quantity,
                    unit_cents: order.unit_cents,
                }),
                Some(Command::Refund(refund)) => Emit::one(refund),
                None => Emit::none(),
            }
        }
        fn placed(&mut self, order: &OrderPlaced) -> Emit {
            self.0.placed(&order.as_fixed())
        }
        fn earned(&mut self, earned: &PointsEarned) {
            self.0.earned(earned);
        }
        fn refunded(&mut self, refund: &RefundIssued) {
            self.0.refunded(refund);
        }
    }
}
