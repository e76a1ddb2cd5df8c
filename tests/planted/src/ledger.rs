//! The order ledger as it is meant to be: every input is a command (`order SKU QUANTITY
//! UNIT_CENTS`, `refund SKU CENTS`), the input's handler records it as an event, the order's
//! handler books it and emits a follow-up event (`points:earned`), and the state keeps a list
//! of order lines, the gross with VAT (a default of the state), refunds and loyalty points.
//! No model is called: the handlers do all the work, so a session records the same events on
//! every run.

use openharness::prelude::*;
use serde::{Deserialize, Serialize};

/// The name sessions of the ledger are recorded under (every variant, buggy or not, uses it).
pub const WORKFLOW_NAME: &str = "orders";

/// The VAT rate a new ledger starts with, in percent.
pub const VAT_PERCENT: u64 = 20;

/// An order was placed.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct OrderPlaced {
    /// What was ordered.
    pub sku: String,
    /// How many.
    pub quantity: u64,
    /// The price of one, in cents, without VAT.
    pub unit_cents: u64,
}

/// The loyalty points an order earned: the order's follow-up event, emitted by its handler.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct PointsEarned {
    /// One point per whole currency unit spent (VAT aside).
    pub points: u64,
}

/// Money was given back.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct RefundIssued {
    /// What the refund is for.
    pub sku: String,
    /// How much, in cents.
    pub cents: u64,
}

/// Every event the ledger's handlers take.
#[event]
pub enum LedgerEvent {
    /// A command, one per turn.
    UserInput,
    /// See [`OrderPlaced`].
    OrderPlaced,
    /// See [`PointsEarned`].
    PointsEarned,
    /// See [`RefundIssued`].
    RefundIssued,
}

/// One booked order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderLine {
    /// What was ordered.
    pub sku: String,
    /// How many.
    pub quantity: u64,
    /// The price of one, in cents, without VAT.
    pub unit_cents: u64,
}

/// The ledger's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// Every order, in the order placed.
    pub orders: Vec<OrderLine>,
    /// What the orders came to, VAT included, in cents.
    pub gross_cents: u64,
    /// What was refunded, in cents.
    pub refunded_cents: u64,
    /// What each refund was for, in order.
    pub refunds: Vec<String>,
    /// Loyalty points earned.
    pub points: u64,
    /// The VAT rate, in percent ([`VAT_PERCENT`] in a new ledger).
    pub vat_percent: u64,
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            orders: Vec::new(),
            gross_cents: 0,
            refunded_cents: 0,
            refunds: Vec::new(),
            points: 0,
            vat_percent: VAT_PERCENT,
        }
    }
}

/// A command read from an input.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `order SKU QUANTITY UNIT_CENTS`.
    Order(OrderPlaced),
    /// `refund SKU CENTS`.
    Refund(RefundIssued),
}

/// The command `text` holds, if it is one (anything else is recorded and ignored).
///
/// ```
/// use openharness_planted_bugs::ledger::{Command, parse};
/// assert!(matches!(parse("order widget 2 1250"), Some(Command::Order(o)) if o.quantity == 2));
/// assert!(matches!(parse("refund widget 300"), Some(Command::Refund(r)) if r.cents == 300));
/// assert_eq!(parse("hello"), None);
/// ```
pub fn parse(text: &str) -> Option<Command> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["order", sku, quantity, unit_cents] => Some(Command::Order(OrderPlaced {
            sku: (*sku).to_owned(),
            quantity: quantity.parse().ok()?,
            unit_cents: unit_cents.parse().ok()?,
        })),
        ["refund", sku, cents] => Some(Command::Refund(RefundIssued {
            sku: (*sku).to_owned(),
            cents: cents.parse().ok()?,
        })),
        _ => None,
    }
}

impl OrderLine {
    /// The line an order books.
    pub fn of(order: &OrderPlaced) -> Self {
        Self {
            sku: order.sku.clone(),
            quantity: order.quantity,
            unit_cents: order.unit_cents,
        }
    }
}

impl PointsEarned {
    /// The points `order` earns.
    pub fn for_order(order: &OrderPlaced) -> Self {
        Self {
            points: order.quantity * order.unit_cents / 100,
        }
    }
}

impl Ledger {
    /// What `order` comes to with this ledger's VAT, in cents.
    pub fn gross(&self, order: &OrderPlaced) -> u64 {
        order.quantity * order.unit_cents * (100 + self.vat_percent) / 100
    }
}

#[handler(LedgerEvent)]
impl Ledger {
    pub(crate) fn input(&mut self, input: &UserInput) -> Emit {
        match parse(&input.text) {
            Some(Command::Order(order)) => Emit::one(order),
            Some(Command::Refund(refund)) => Emit::one(refund),
            None => Emit::none(),
        }
    }

    pub(crate) fn placed(&mut self, order: &OrderPlaced) -> Emit {
        self.orders.push(OrderLine::of(order));
        self.gross_cents += self.gross(order);
        Emit::one(PointsEarned::for_order(order))
    }

    pub(crate) fn earned(&mut self, earned: &PointsEarned) {
        self.points += earned.points;
    }

    pub(crate) fn refunded(&mut self, refund: &RefundIssued) {
        self.refunded_cents += refund.cents;
        self.refunds.push(refund.sku.clone());
    }
}
