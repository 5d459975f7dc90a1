//! A data type update inside a coordinated put
//! (docs/formats/vnode-messages.md "Data type update"): the bucket's data
//! type (its PB `DataType` number), its `hll_precision`, whether a context
//! follows and the context's clock (an actor table and clock as data type
//! states write them), then the operation ([`eddy_dt::Op::encode`]).

use eddy_dt::codec::{Reader, Writer};
use eddy_dt::{DataType, Op};

use super::WireError;
use eddy_vnode::msg::DtUpdate;

pub(super) fn encode(u: &DtUpdate) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(u.datatype.tag());
    w.u8(u.hll_precision);
    match &u.context {
        Some(clock) => {
            w.u8(1);
            w.clock_alone(clock);
        }
        None => w.u8(0),
    }
    u.op.encode(&mut w);
    w.buf
}

pub(super) fn decode(bytes: &[u8]) -> Result<DtUpdate, WireError> {
    let mut r = Reader::new(bytes);
    let bad = WireError::BadDatatype;
    let tag = r.u8().map_err(bad)?;
    let datatype = DataType::from_tag(tag).ok_or(WireError::BadByte {
        what: "data type",
        value: tag,
    })?;
    let hll_precision = r.u8().map_err(bad)?;
    let context = match r.u8().map_err(bad)? {
        0 => None,
        1 => Some(r.clock_alone().map_err(bad)?),
        value => {
            return Err(WireError::BadByte {
                what: "context flag",
                value,
            });
        }
    };
    let op = Op::decode(&mut r).map_err(bad)?;
    r.finish().map_err(bad)?;
    Ok(DtUpdate {
        op,
        datatype,
        hll_precision,
        context,
    })
}
