/**
 * Datoms and the index orders. {@link datalith.index.Datom} is one fact
 * {@code [e a v tx added]}; {@link datalith.index.Index} names the four covering indexes (EAVT,
 * AEVT, AVET, VAET), each with its current and its history sub-database of the store;
 * {@link datalith.index.KeyBuilder} assembles their keys from entity ids and the codec's key
 * parts.
 *
 * <p>Threading: datoms and index names are immutable and may be shared; a key builder belongs
 * to one thread.
 */
package datalith.index;
