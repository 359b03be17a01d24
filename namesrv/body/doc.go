// Package body encodes and decodes the payloads of NameServer commands: the
// broker registration body (JSON or zlib-compressed), DataVersion, queue and
// broker data, and the route, cluster, topic-list and member-group answers,
// byte for byte as the Java NameServer writes them
// (docs/protocol.md#request-codes).
package body
