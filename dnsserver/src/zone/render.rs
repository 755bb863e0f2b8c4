//! Turns a [`Resolution`] into wire format with hickory-proto's encoder
//! (name compression included). Used at snapshot build time, and on the
//! query path only for the rare answers that are not pre-rendered.

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, Record, RecordType};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder, NameEncoding};

use super::resolve::Resolution;

/// A whole response message for `qname`/`qtype`: ID 0, QR set, AA and
/// RCODE from the resolution, RD/CD clear (the query path copies them in),
/// no OPT (the query path appends it).
///
/// Returns `None` only if hickory cannot encode the records, which would
/// mean invalid data slipped into the tree.
pub(crate) fn render(qname: &Name, qtype: RecordType, res: &Resolution) -> Option<Vec<u8>> {
    let mut message = Message::new(0, MessageType::Response, OpCode::Query);
    message.metadata.authoritative = res.authoritative;
    message.metadata.response_code = res.rcode;
    let mut query = Query::query(qname.clone(), qtype);
    query.query_class = DNSClass::IN;
    message.add_query(query);
    message.add_answers(res.answers.iter().cloned());
    message.add_authorities(res.authorities.iter().cloned());
    message.add_additionals(res.additionals.iter().cloned());
    message.to_vec().ok()
}

/// The SOA RR of a negative answer without its owner name: TYPE, CLASS,
/// TTL, RDLENGTH and RDATA with uncompressed names. The query path puts a
/// compression pointer to the apex inside the question in front of it.
pub(crate) fn record_without_owner(record: &Record) -> Option<Vec<u8>> {
    let mut rooted = record.clone();
    rooted.name = Name::root();
    let mut buf = Vec::with_capacity(128);
    {
        let mut encoder = BinEncoder::new(&mut buf);
        encoder.set_name_encoding(NameEncoding::Uncompressed);
        rooted.emit(&mut encoder).ok()?;
    }
    // The root owner is the single octet 0.
    (buf.first() == Some(&0)).then(|| buf.split_off(1))
}
