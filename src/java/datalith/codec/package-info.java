/**
 * Order-preserving byte encoding of datom values, for index keys (compared as
 * unsigned bytes) and the transaction log.
 *
 * <p>{@link datalith.codec.Codec} is the only public type. Every encoding
 * starts with a type tag byte. Fixed-width types (boolean, long, double,
 * float, instant, uuid, ref) follow it with a fixed-size body; variable-length
 * types (string, keyword, symbol, bytes, bigint, bigdec, tuple, EDN, uri) follow it
 * with an escaped body in which {@code 0x00} is always the first byte of a
 * two-byte unit: {@code 00 FF} a content zero, {@code 00 01} a field separator,
 * {@code 00 00} the end, {@code 00 02} the overflow marker of a key part, which
 * is followed by a 16-byte hash and ends it.
 *
 * <p>Values: every type of {@code Codec.T_*}, and any other value nippy can
 * freeze (compared by equality only), except Java arrays other than
 * {@code byte[]} (they compare by identity) and collections nested deeper
 * than {@code Codec.MAX_NESTING}; {@code Codec.unstorable} says which.
 *
 * <p>Decoding (decode, skipKeyPart, isOverflow, overflowHashOffset) reads what a
 * store holds: malformed bytes, a damaged store's, are a {@code :store/corrupt}
 * ex-info, never another exception.
 *
 * <p>Threading: every method is static and stateless; any thread may call any
 * method at any time. Buffers passed in are only read, by absolute index.
 */
package datalith.codec;
