//! Vnode messages over the network (design note 010 §1): [`wire`], their
//! binary format.

pub mod wire;
