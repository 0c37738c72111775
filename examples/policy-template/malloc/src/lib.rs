//! libchunklifo.so: `LD_PRELOAD=target/release/libchunklifo.so program` runs a program on a
//! `Heap<ChunkLifoConfig>`, with every `ALLOCLAB_CONF` option of liballoclab.so.

alloclab_preload::export!(policy_template::ChunkLifoConfig);
