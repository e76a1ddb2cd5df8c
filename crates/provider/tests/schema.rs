//! The Anthropic and OpenAI-strict forms of schemars schemas, pinned with insta, and checked
//! against the fake servers' independent subset rules.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::BTreeMap;

use openharness_provider::schema::{SchemaError, for_anthropic, for_openai_strict};
use openharness_provider::testing::{anthropic, openai};
use schemars::JsonSchema;
use serde_json::Value;

/// A task with optional fields.
#[derive(JsonSchema)]
struct Task {
    /// The task's title.
    title: String,
    /// Who does it, if anyone yet.
    assignee: Option<String>,
    /// Estimated hours.
    #[schemars(range(min = 1, max = 40))]
    hours: u32,
    /// Labels.
    #[serde(default)]
    labels: Vec<String>,
}

/// How urgent.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    /// Soon.
    High,
    /// Some day.
    Low,
}

/// A tagged choice.
#[derive(JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Step {
    /// Run a command.
    Run { command: String },
    /// Wait.
    Wait { seconds: u32 },
}

/// Nested objects, an enum, a tagged enum, formats and length limits.
#[derive(JsonSchema)]
struct Plan {
    /// The goal.
    #[schemars(length(min = 3, max = 200))]
    goal: String,
    priority: Priority,
    /// When it is due.
    #[schemars(extend("format" = "date"))]
    due: String,
    tasks: Vec<Task>,
    next: Option<Step>,
}

/// A map.
#[derive(JsonSchema)]
struct Scores {
    by_name: BTreeMap<String, f64>,
}

/// A recursive tree.
#[derive(JsonSchema)]
struct Tree {
    name: String,
    children: Vec<Tree>,
}

fn schema<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

#[test]
fn optional_fields_and_constraints() {
    let original = schema::<Task>();
    let anthropic_form = for_anthropic(&original).unwrap();
    let strict = for_openai_strict(&original).unwrap();
    assert!(
        anthropic::subset_violations(&anthropic_form).is_empty(),
        "{:?}",
        anthropic::subset_violations(&anthropic_form)
    );
    assert!(
        openai::strict_violations(&strict).is_empty(),
        "{:?}",
        openai::strict_violations(&strict)
    );
    insta::assert_json_snapshot!("task_anthropic", anthropic_form);
    insta::assert_json_snapshot!("task_openai_strict", strict);
}

#[test]
fn nested_objects_enums_and_tagged_enums() {
    let original = schema::<Plan>();
    assert!(
        !anthropic::subset_violations(&original).is_empty(),
        "the original is outside the subset"
    );
    let anthropic_form = for_anthropic(&original).unwrap();
    let strict = for_openai_strict(&original).unwrap();
    assert!(
        anthropic::subset_violations(&anthropic_form).is_empty(),
        "{:?}",
        anthropic::subset_violations(&anthropic_form)
    );
    assert!(
        openai::strict_violations(&strict).is_empty(),
        "{:?}",
        openai::strict_violations(&strict)
    );
    insta::assert_json_snapshot!("plan_anthropic", anthropic_form);
    insta::assert_json_snapshot!("plan_openai_strict", strict);
}

#[test]
fn maps_cannot_be_expressed_by_either_subset() {
    let original = schema::<Scores>();
    insta::assert_json_snapshot!("scores_original", original);
    assert!(matches!(
        for_anthropic(&original),
        Err(SchemaError::Unsupported {
            target: "anthropic",
            ..
        })
    ));
    let err = for_openai_strict(&original).unwrap_err();
    assert!(err.to_string().contains("/properties/by_name"), "{err}");
}

#[test]
fn recursion_is_strict_for_openai_and_unsupported_for_anthropic() {
    let original = schema::<Tree>();
    let err = for_anthropic(&original).unwrap_err();
    assert!(err.to_string().contains("recursive"), "{err}");
    let strict = for_openai_strict(&original).unwrap();
    assert!(
        openai::strict_violations(&strict).is_empty(),
        "{:?}",
        openai::strict_violations(&strict)
    );
    insta::assert_json_snapshot!("tree_openai_strict", strict);
}

#[test]
fn transformed_outputs_still_validate_against_the_original() {
    // A value valid for the strict form, once optional nulls are removed, is valid for the
    // original schema.
    let original = schema::<Task>();
    let mut output =
        serde_json::json!({ "title": "x", "assignee": null, "hours": 3, "labels": null });
    openharness_provider::schema::remove_optional_nulls(&original, &mut output);
    assert_eq!(
        output,
        serde_json::json!({ "title": "x", "hours": 3 }),
        "optional fields sent as null are dropped"
    );
}
