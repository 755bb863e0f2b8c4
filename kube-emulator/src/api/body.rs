//! What every answer of the emulator is made of, below the handler, the
//! cluster and the extensions that produce answers.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

/// Response body: a whole JSON document or a watch stream.
pub type Body = BoxBody<Bytes, Infallible>;

/// Largest request body, in octets (kube-apiserver's default is 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;
