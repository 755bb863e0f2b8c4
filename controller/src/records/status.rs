//! A record's conditions (`Ready`, `InputValid`) and its status write.

use fedns_api::conditions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::Resource;
use serde_json::json;

use super::builder::BuildProblem;

/// Condition saying whether every input value was usable.
pub const INPUT_VALID: &str = "InputValid";

/// A record's `Ready` (from how many healthy shards it has) and
/// `InputValid` (from the problems building its endpoints); returns
/// whether either changed.
pub(super) fn set_record_conditions(
    conditions_list: &mut Vec<Condition>,
    healthy: usize,
    none_message: &str,
    problems: &[BuildProblem],
    generation: Option<i64>,
) -> bool {
    let changed = if healthy == 0 {
        conditions::set(
            conditions_list,
            conditions::READY,
            false,
            conditions::NO_HEALTHY_ENDPOINTS,
            none_message,
            generation,
        )
    } else {
        conditions::set(
            conditions_list,
            conditions::READY,
            true,
            "Published",
            &format!("{healthy} healthy cluster(s)"),
            generation,
        )
    };
    changed | set_input_condition(conditions_list, problems, generation)
}

fn set_input_condition(
    conditions_list: &mut Vec<Condition>,
    problems: &[BuildProblem],
    generation: Option<i64>,
) -> bool {
    if problems.is_empty() {
        conditions::set(
            conditions_list,
            INPUT_VALID,
            true,
            "AllInputsValid",
            "every load balancer value is usable",
            generation,
        )
    } else {
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        conditions::set(
            conditions_list,
            INPUT_VALID,
            false,
            conditions::INVALID_INPUT,
            &messages.join("; "),
            generation,
        )
    }
}

pub(super) async fn patch_status<K>(api: Api<K>, name: &str, status: serde_json::Value) -> Result<(), kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status})))
        .await
        .map(|_| ())
}
