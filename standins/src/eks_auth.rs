//! An EKS cluster's token authentication, for an emulator standing in
//! for an EKS API server: bearer tokens `k8s-aws-v1.<base64url URL>` that
//! carry a presigned STS `GetCallerIdentity`.
//!
//! The checks of the token's form are aws-iam-authenticator's
//! (kubernetes-sigs/aws-iam-authenticator
//! 81b1daba00d194c00d3cdd8b0a0fece5ba648d4e, `pkg/token/token.go`,
//! `tokenVerifier.Verify`): the prefix, unpadded base64url, an `https`
//! URL to an STS host (`sts.amazonaws.com`, `sts.<region>.amazonaws.com`,
//! `sts.<region>.amazonaws.com.cn`), path `/`, only the allowed query
//! parameters, each once (names compared without case),
//! `Action=GetCallerIdentity`, `x-k8s-aws-id` among the signed headers,
//! `X-Amz-Expires` within 0..=900, and `X-Amz-Date` at most 15 minutes
//! old.
//!
//! The real authenticator then sends the request to STS with
//! `x-k8s-aws-id: <this cluster's ID>`, and STS checks the signature.
//! This stand-in does STS's part itself, with the secret of the access
//! key: it signs the same request again (aws-sigv4, the same signer the
//! AWS SDKs use) and compares signatures, so a token signed for another
//! cluster, with another secret, or altered, is refused as STS would
//! refuse it. Secrets come from [`AwsKey`]s it is given, or, for
//! temporary keys, from a moto server's state (`/moto-api/data.json`,
//! its `sts.AssumedRole` entries: what moto handed out for
//! `sts:AssumeRole`), with the session token compared too.
//!
//! Not done: STS's other refusals (a disabled key, a denying policy, a
//! role session revoked), throttling, and EKS's mapping of identities
//! to Kubernetes users and groups beyond "this ARN may".

use std::time::{Duration, SystemTime};

use base64::Engine;

/// What every token starts with.
pub const TOKEN_PREFIX: &str = "k8s-aws-v1.";
const CLUSTER_ID_HEADER: &str = "x-k8s-aws-id";
/// aws-iam-authenticator's `parameterWhitelist`.
const ALLOWED_PARAMETERS: [&str; 9] = [
    "action",
    "version",
    "x-amz-algorithm",
    "x-amz-credential",
    "x-amz-date",
    "x-amz-expires",
    "x-amz-security-token",
    "x-amz-signature",
    "x-amz-signedheaders",
];
/// aws-iam-authenticator's `maxTokenLenBytes`.
const MAX_TOKEN_OCTETS: usize = 1024 * 4;
const URL_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// An access key STS would know.
#[derive(Clone, Debug)]
pub struct AwsKey {
    /// Access key ID (`AKIA…`).
    pub access_key_id: String,
    /// Its secret.
    pub secret_access_key: String,
    /// The identity STS reports for it (`arn:aws:iam::<account>:user/<name>`).
    pub arn: String,
}

/// How an emulator authenticates EKS tokens.
#[derive(Clone, Debug, Default)]
pub struct EksAuthenticator {
    /// The cluster ID the token must be signed for (the EKS cluster's name).
    pub cluster_id: String,
    /// Long-term keys and their identities.
    pub keys: Vec<AwsKey>,
    /// A moto server (`http://127.0.0.1:PORT`) whose assumed-role keys
    /// are accepted, with the assumed-role ARN as the identity.
    pub moto_url: Option<String>,
    /// The identities allowed in (EKS access entries); empty: any verified one.
    pub allowed_arns: Vec<String>,
}

/// An emulator standing in for an EKS API server accepts the tokens this
/// authenticator verifies ([`fedns_kube_emulator::Emulator::add_token_authenticator`]).
impl fedns_kube_emulator::TokenAuthenticator for EksAuthenticator {
    fn claims(&self, token: &str) -> bool {
        token.starts_with(TOKEN_PREFIX)
    }

    fn authenticate<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.verify(token).await.map(|_| ()) })
    }
}

impl EksAuthenticator {
    /// The identity (ARN) behind `token`. Errors name the first check
    /// that failed, in aws-iam-authenticator's words where it has them.
    pub async fn verify(&self, token: &str) -> Result<String, String> {
        let presigned = self.well_formed(token, SystemTime::now())?;
        let (secret, session, arn) = self.secret_of(&presigned.access_key_id).await?;
        if presigned.session_token.as_deref() != session.as_deref() {
            return Err("the security token does not match the access key".into());
        }
        let expected = presigned.signature_with(&secret, &self.cluster_id)?;
        if expected != presigned.signature {
            return Err(format!(
                "SignatureDoesNotMatch: the request signature does not match one made with the secret of {} for cluster {:?}",
                presigned.access_key_id, self.cluster_id
            ));
        }
        if !self.allowed_arns.is_empty() && !self.allowed_arns.contains(&arn) {
            return Err(format!("{arn} has no access to this cluster"));
        }
        Ok(arn)
    }

    /// The checks aws-iam-authenticator makes before it asks STS.
    fn well_formed(&self, token: &str, now: SystemTime) -> Result<Presigned, String> {
        if token.len() > MAX_TOKEN_OCTETS {
            return Err("token is too large".into());
        }
        let encoded = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or_else(|| format!("token is missing expected {TOKEN_PREFIX:?} prefix"))?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|e| e.to_string())?;
        let url = String::from_utf8(bytes).map_err(|e| e.to_string())?;
        let uri: http::Uri = url.parse().map_err(|e| format!("{e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!(
                "unexpected scheme {:?} in pre-signed URL",
                uri.scheme_str().unwrap_or_default()
            ));
        }
        let host = uri.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        if !sts_host(&host) {
            return Err(format!("unexpected hostname {host:?} in pre-signed URL"));
        }
        if uri.path() != "/" {
            return Err("unexpected path in pre-signed URL".into());
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for (key, value) in form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes()) {
            let lower = key.to_ascii_lowercase();
            if params.iter().any(|(k, _)| k.eq_ignore_ascii_case(&lower)) {
                return Err(format!("duplicate query parameter found: {key:?}"));
            }
            if !ALLOWED_PARAMETERS.contains(&lower.as_str()) {
                return Err(format!("non-whitelisted query parameter {key:?}"));
            }
            params.push((key.into_owned(), value.into_owned()));
        }
        let get = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        if get("action").as_deref() != Some("GetCallerIdentity") {
            return Err("unexpected action parameter in pre-signed URL".into());
        }
        let signed_headers = get("x-amz-signedheaders").unwrap_or_default();
        if !signed_headers
            .split(';')
            .any(|h| h.eq_ignore_ascii_case(CLUSTER_ID_HEADER))
        {
            return Err(format!(
                "client did not sign the {CLUSTER_ID_HEADER} header in the pre-signed URL"
            ));
        }
        let expires = get("x-amz-expires").and_then(|e| e.parse::<i64>().ok());
        let expires = match expires {
            Some(e @ 0..=900) => e,
            other => {
                return Err(format!(
                    "invalid X-Amz-Expires parameter in pre-signed URL: {}",
                    other.unwrap_or(0)
                ))
            }
        };
        let date = get("x-amz-date").ok_or("X-Amz-Date parameter must be present in pre-signed URL")?;
        let signed_at = jiff::civil::DateTime::strptime("%Y%m%dT%H%M%SZ", &date)
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC))
            .map_err(|e| format!("error parsing X-Amz-Date parameter {date}: {e}"))?;
        let signed_at = SystemTime::from(signed_at.timestamp());
        if now > signed_at + URL_LIFETIME {
            return Err(format!("X-Amz-Date parameter is expired (15 minute expiration) {date}"));
        }
        // What the signature is checked against: STS's part.
        let credential = get("x-amz-credential").unwrap_or_default();
        let scope: Vec<&str> = credential.split('/').collect();
        let [access_key_id, _day, region, service, "aws4_request"] = scope[..] else {
            return Err(format!("malformed X-Amz-Credential {credential:?}"));
        };
        if service != "sts" || !signed_headers.eq_ignore_ascii_case("host;x-k8s-aws-id") {
            return Err(format!(
                "the signature covers {service}/{signed_headers}, not what STS checks (sts, host;x-k8s-aws-id)"
            ));
        }
        let unsigned: Vec<(String, String)> = params
            .iter()
            .filter(|(k, _)| matches!(k.to_ascii_lowercase().as_str(), "action" | "version"))
            .cloned()
            .collect();
        Ok(Presigned {
            host,
            unsigned,
            access_key_id: access_key_id.to_owned(),
            region: region.to_owned(),
            signed_at,
            expires: Duration::from_secs(expires.unsigned_abs()),
            session_token: get("x-amz-security-token"),
            signature: get("x-amz-signature").unwrap_or_default(),
        })
    }

    /// The secret, session token and identity of `access_key_id`.
    async fn secret_of(&self, access_key_id: &str) -> Result<(String, Option<String>, String), String> {
        if let Some(key) = self.keys.iter().find(|k| k.access_key_id == access_key_id) {
            return Ok((key.secret_access_key.clone(), None, key.arn.clone()));
        }
        let Some(moto) = &self.moto_url else {
            return Err(format!("InvalidClientTokenId: access key {access_key_id} is not known"));
        };
        let state = moto_state(moto).await?;
        let roles = state["sts"]["AssumedRole"].as_array().cloned().unwrap_or_default();
        let role = roles
            .iter()
            .find(|r| r["access_key_id"] == access_key_id)
            .ok_or_else(|| format!("InvalidClientTokenId: access key {access_key_id} is not known to STS"))?;
        let text = |field: &str| role[field].as_str().map(str::to_owned);
        Ok((
            text("secret_access_key").unwrap_or_default(),
            text("session_token"),
            text("arn").unwrap_or_default(),
        ))
    }
}

/// moto's state (`GET /moto-api/data.json` on its loopback port): every
/// model it holds, each with its attributes.
async fn moto_state(moto: &str) -> Result<serde_json::Value, String> {
    use http_body_util::BodyExt;
    let uri: http::Uri = format!("{}/moto-api/data.json", moto.trim_end_matches('/'))
        .parse()
        .map_err(|e| format!("moto URL {moto:?}: {e}"))?;
    let authority = uri
        .authority()
        .ok_or_else(|| format!("moto URL {moto:?} has no host"))?
        .clone();
    let fail = |e: &dyn std::fmt::Display| format!("reading moto's state at {uri}: {e}");
    let tcp = tokio::net::TcpStream::connect(authority.as_str())
        .await
        .map_err(|e| fail(&e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
        .await
        .map_err(|e| fail(&e))?;
    tokio::spawn(connection);
    let request = http::Request::get(uri.path())
        .header(http::header::HOST, authority.as_str())
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| fail(&e))?;
    let response = sender.send_request(request).await.map_err(|e| fail(&e))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| fail(&e))?.to_bytes();
    if !status.is_success() {
        return Err(fail(&status));
    }
    serde_json::from_slice(&body).map_err(|e| fail(&e))
}

/// Whether `host` is an STS endpoint's host, as aws-iam-authenticator
/// accepts them (global, regional, China).
fn sts_host(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    match labels[..] {
        ["sts", "amazonaws", "com"] => true,
        ["sts", region, "amazonaws", "com"] | ["sts", region, "amazonaws", "com", "cn"] => {
            // `validateInputRegion`: ^[a-z0-9-]+$
            !region.is_empty()
                && region
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        }
        _ => false,
    }
}

/// A well-formed token's request, ready to be signed again.
struct Presigned {
    host: String,
    /// The request's own parameters (`Action`, `Version`).
    unsigned: Vec<(String, String)>,
    access_key_id: String,
    region: String,
    signed_at: SystemTime,
    expires: Duration,
    session_token: Option<String>,
    signature: String,
}

impl Presigned {
    /// The signature STS computes for this request with `secret`, the
    /// header `x-k8s-aws-id: cluster_id` sent with it.
    fn signature_with(&self, secret: &str, cluster_id: &str) -> Result<String, String> {
        use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings};
        let query: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&self.unsigned)
            .finish();
        let url = format!("https://{}/?{query}", self.host);
        let credentials = aws_credential_types::Credentials::new(
            &self.access_key_id,
            secret,
            self.session_token.clone(),
            None,
            "sts-stand-in",
        );
        let identity = credentials.into();
        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(self.expires);
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("sts")
            .time(self.signed_at)
            .settings(settings)
            .build()
            .map_err(|e| e.to_string())?
            .into();
        let signable = SignableRequest::new(
            "GET",
            url.as_str(),
            std::iter::once((CLUSTER_ID_HEADER, cluster_id)),
            SignableBody::Bytes(&[]),
        )
        .map_err(|e| e.to_string())?;
        let (_, signature) = sign(signable, &params).map_err(|e| e.to_string())?.into_parts();
        Ok(signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token as `aws-iam-authenticator token` / `argocd-k8s-auth aws`
    /// make it: the same signer, the same request.
    fn token_for(cluster: &str, secret: &str, at: SystemTime, extra: &str) -> String {
        use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings};
        let url = format!("https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15{extra}");
        let identity = aws_credential_types::Credentials::new("AKIDEXAMPLE", secret, None, None, "t").into();
        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(Duration::from_secs(60));
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region("eu-west-1")
            .name("sts")
            .time(at)
            .settings(settings)
            .build()
            .unwrap()
            .into();
        let signable = SignableRequest::new(
            "GET",
            url.as_str(),
            std::iter::once(("x-k8s-aws-id", cluster)),
            SignableBody::Bytes(&[]),
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut request = http::Request::get(url.as_str()).body(()).unwrap();
        instructions.apply_to_request_http1x(&mut request);
        format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(request.uri().to_string())
        )
    }

    fn authenticator() -> EksAuthenticator {
        EksAuthenticator {
            cluster_id: "prod".into(),
            keys: vec![AwsKey {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "secret".into(),
                arn: "arn:aws:iam::123456789012:user/fedns".into(),
            }],
            ..EksAuthenticator::default()
        }
    }

    #[tokio::test]
    async fn a_token_signed_for_this_cluster_with_a_known_key_is_its_identity() {
        let token = token_for("prod", "secret", SystemTime::now(), "");
        assert_eq!(
            authenticator().verify(&token).await.unwrap(),
            "arn:aws:iam::123456789012:user/fedns"
        );
    }

    #[tokio::test]
    async fn what_sts_or_the_authenticator_refuse_is_refused() {
        let now = SystemTime::now();
        let a = authenticator();
        for (token, why) in [
            (token_for("staging", "secret", now, ""), "SignatureDoesNotMatch"),
            (token_for("prod", "other", now, ""), "SignatureDoesNotMatch"),
            (
                token_for("prod", "secret", now - Duration::from_secs(16 * 60), ""),
                "is expired",
            ),
            (
                token_for("prod", "secret", now, "&Extra=1"),
                "non-whitelisted query parameter",
            ),
            ("bearer".to_owned(), "missing expected"),
            (format!("{TOKEN_PREFIX}!!"), "Invalid"),
            (
                format!(
                    "{TOKEN_PREFIX}{}",
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .encode("https://sts.evil.example/?Action=GetCallerIdentity")
                ),
                "unexpected hostname",
            ),
            (
                format!(
                    "{TOKEN_PREFIX}{}",
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .encode("https://sts.amazonaws.com/?Action=GetCallerIdentity&X-Amz-SignedHeaders=host")
                ),
                "did not sign the x-k8s-aws-id header",
            ),
        ] {
            let err = a.verify(&token).await.unwrap_err();
            assert!(err.contains(why), "{why}: {err}");
        }
        let mut unknown = authenticator();
        unknown.keys[0].access_key_id = "AKIDOTHER".into();
        let err = unknown.verify(&token_for("prod", "secret", now, "")).await.unwrap_err();
        assert!(err.contains("InvalidClientTokenId"), "{err}");
        let mut narrow = authenticator();
        narrow.allowed_arns = vec!["arn:aws:iam::123456789012:role/admin".into()];
        let err = narrow.verify(&token_for("prod", "secret", now, "")).await.unwrap_err();
        assert!(err.contains("has no access"), "{err}");
    }

    #[test]
    fn sts_hosts_are_those_the_authenticator_accepts() {
        for host in [
            "sts.amazonaws.com",
            "sts.us-east-1.amazonaws.com",
            "sts.cn-north-1.amazonaws.com.cn",
        ] {
            assert!(sts_host(host), "{host}");
        }
        for host in [
            "sts.example.com",
            "127.0.0.1:443",
            "sts.US.amazonaws.com",
            "evil.sts.amazonaws.com",
        ] {
            assert!(!sts_host(host), "{host}");
        }
    }
}
