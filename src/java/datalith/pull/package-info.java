/**
 * The pull API: {@link datalith.pull.PullPattern} parses Datomic's pull
 * patterns, {@link datalith.pull.Puller} walks the indexes of one database
 * value to build the nested maps. A puller is used by one thread and reads
 * through one snapshot; parsed patterns are immutable and shareable.
 */
package datalith.pull;
