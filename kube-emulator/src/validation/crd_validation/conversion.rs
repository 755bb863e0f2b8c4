//! Conversion settings and their webhook: a port of
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! (`validateCustomResourceConversion`, `validateConversionReviewVersions`)
//! and `apiserver/pkg/util/webhook/validation.go` (`ValidateWebhookURL`,
//! `ValidateWebhookService`), with the parts of Go's `net/url.Parse` they
//! (and `validateAPIApproval`'s URL check) look at.

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{forbidden, invalid, required, s, validate_enum_strings, Errors, Path};
use super::json::{text, Obj};
use super::names::{is_dns1035_label, is_dns1123_subdomain};

#[derive(Default)]
pub(super) struct Url {
    pub(super) scheme: String,
    user: Option<String>,
    pub(super) host: String,
    query: String,
    fragment: String,
}

/// The parts of Go's `url.Parse` the webhook checks look at.
pub(super) fn parse_url(raw: &str) -> Url {
    let mut u = Url::default();
    let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    u.fragment = fragment.to_owned();
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    u.query = query.to_owned();
    let mut rest = rest;
    if let Some((scheme, after)) = rest.split_once(':') {
        if !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            u.scheme = scheme.to_ascii_lowercase();
            rest = after;
        }
    }
    if let Some(after) = rest.strip_prefix("//") {
        let authority = after.split('/').next().unwrap_or_default();
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                u.user = Some(user.to_owned());
                u.host = host.to_owned();
            }
            None => u.host = authority.to_owned(),
        }
    }
    u
}

pub(super) fn validate_conversion(c: &Obj, strategy: &str, p: &Path, errs: &mut Errors) {
    validate_enum_strings(&p.child("strategy"), strategy, &["None", "Webhook"], errs);
    let webhook = c.get("webhook").and_then(Value::as_object);
    let client_config = webhook.and_then(|w| w.get("clientConfig")).and_then(Value::as_object);
    let review_versions = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array);
    if strategy == "Webhook" {
        let wp = p.child("webhookClientConfig");
        match client_config {
            None => errs.push(required(&wp, "required when strategy is set to Webhook")),
            Some(cc) => {
                let url = cc.get("url").and_then(Value::as_str);
                let service = cc.get("service").and_then(Value::as_object);
                match (url, service) {
                    (Some(u), None) => validate_webhook_url(&wp.child("url"), u, errs),
                    (None, Some(svc)) => validate_webhook_service(&wp.child("service"), svc, errs),
                    _ => errs.push(required(&wp, "exactly one of url or service is required")),
                }
            }
        }
        let rp = p.child("conversionReviewVersions");
        let versions: Vec<String> = review_versions
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        if versions.is_empty() {
            errs.push(required(&rp, ""));
        } else {
            let mut seen = BTreeSet::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if !seen.insert(v.as_str()) {
                    errs.push(invalid(&rp.index(i), &s(v), "duplicate version"));
                    continue;
                }
                for e in is_dns1035_label(v) {
                    errs.push(invalid(&rp.index(i), &s(v), &e));
                }
                if v == "v1" || v == "v1beta1" {
                    accepted = true;
                }
            }
            if !accepted {
                let value = Value::Array(versions.iter().map(|v| s(v)).collect());
                errs.push(invalid(&rp, &value, "must include at least one of v1, v1beta1"));
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(forbidden(
                &p.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if review_versions.is_some_and(|v| !v.is_empty()) {
            errs.push(forbidden(
                &p.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

fn validate_webhook_url(p: &Path, raw: &str, errs: &mut Errors) {
    const FORM: &str = "; desired format: https://host[/path]";
    let u = parse_url(raw);
    if u.scheme != "https" {
        errs.push(invalid(
            p,
            &s(&u.scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(invalid(p, &s(&u.host), &format!("host must be specified{FORM}")));
    }
    if let Some(user) = &u.user {
        errs.push(invalid(p, &s(user), "user information is not permitted in the URL"));
    }
    if !u.fragment.is_empty() {
        errs.push(invalid(p, &s(&u.fragment), "fragments are not permitted in the URL"));
    }
    if !u.query.is_empty() {
        errs.push(invalid(
            p,
            &s(&u.query),
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_webhook_service(p: &Path, svc: &Obj, errs: &mut Errors) {
    if text(svc, "name").is_empty() {
        errs.push(required(&p.child("name"), ""));
    }
    if text(svc, "namespace").is_empty() {
        errs.push(required(&p.child("namespace"), ""));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443); // SetDefaults_ServiceReference
    if !(1..=65535).contains(&port) {
        errs.push(invalid(
            &p.child("port"),
            &Value::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = svc.get("path").and_then(Value::as_str) else {
        return;
    };
    if path == "/" || path.is_empty() {
        return;
    }
    let pp = p.child("path");
    if path == "//" {
        errs.push(invalid(&pp, &s(path), "segment[0] may not be empty"));
        return;
    }
    if !path.starts_with('/') {
        errs.push(invalid(&pp, &s(path), "must start with a '/'"));
    }
    let mut check = path.get(1..).unwrap_or_default();
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(invalid(&pp, &s(path), &format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(invalid(&pp, &s(path), &format!("segment[{i}]: {failure}")));
        }
    }
}
