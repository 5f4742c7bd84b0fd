package datalith.store;

/**
 * The named sub-databases every {@link Store} keeps. Keys sort by unsigned
 * lexicographic byte order in all of them.
 */
public enum SubDb {
  /** Current datoms, key e|a|v|tx, empty value. */
  EAVT,
  /** Current datoms, key a|e|v|tx, empty value. */
  AEVT,
  /** Current datoms, key a|v|e|tx, empty value. */
  AVET,
  /** Current datoms of ref attributes, key v|a|e|tx, empty value. */
  VAET,
  /** Retracted datoms, key e|a|v|assertedTx|retractedTx, empty value. */
  HEAVT,
  /** Retracted datoms, key a|e|v|assertedTx|retractedTx, empty value. */
  HAEVT,
  /** Retracted datoms, key a|v|e|assertedTx|retractedTx, empty value. */
  HAVET,
  /** Retracted datoms of ref attributes, key v|a|e|assertedTx|retractedTx, empty value. */
  HVAET,
  /** Transaction log: key t (8 bytes, big-endian), value the transaction's datoms. */
  LOG,
  /** Values too long to inline in a key: key 16-byte hash, value the full encoding. */
  BLOBS,
  /** Metadata: key an ASCII name, value its bytes (format version, basis t, next ids). */
  META
}
