// Package stream is the streaming SDGNN forecaster. Its core knows no
// broker: message formats and their codec, validation, the per-node state
// with cached embeddings, the emission policy, durable snapshots and
// metrics. Around it, the Kafka Service feeds it readings and publishes
// what it emits, with its HTTP endpoints and live view; StartEmbedded
// runs a Kafka-protocol broker in process (kfake), and Publish and
// PublishReadings write readings into the topic.
//
// # Data flow
//
// Sensors (nodes 0..N-1) publish one Reading per slot (StepMs long; TS is the
// slot start in Unix ms, on the grid). A reading is decoded (DecodeReading),
// validated against the model and the clock (Validator), and applied
// (State.Apply), which keeps each node's last Window readings in a ring and
// recomputes the node's embedding φ(GRU(window)) once when its window
// changes. The Emitter then says which nodes' forecasts are due
// (Emitter.OnApply, Emitter.Due) and makes them (Emitter.Emit, through
// State.Forecast), each from the |θ_z| ≤ 6 cached embeddings of the node's
// receptive nodes. Refused messages become DeadLetters.
//
// # Sensor names
//
// Inside, a sensor is its node index. Outside, it is named as the model
// names it (pems.SensorNames): by the IDs of the data it was trained on
// where it records them (sdgnn.BundleMeta.SensorIDs: Los-loop's detector
// IDs, such as 773869), by the index otherwise (PeMS, SZ-taxi, and every
// model written before IDs were kept). With IDs, a reading's "sensor" is
// the ID, a JSON string or a number, and its key the ID
// (DecodeReadingFor); an ID the model lacks is dead-lettered as
// unknown_sensor, naming it. Forecasts are keyed and name their sensor
// and inputs by the ID (Forecast.ID, a JSON string), and the HTTP API,
// the live view and the CSV files take and give the IDs. A reload must
// keep the names; a state file, which holds indices, is the service's
// own and is not checked against them.
//
// # Forecast slot and staleness
//
// Node z's forecast is for the slot after the newest slot t over its
// receptive nodes, each contributing its newest window: TS = (t+1)·step.
// StaleSlots = max over inputs of (t − newest input slot): 0 when all inputs
// have slot t. Each input's Gaps counts the slots of its window without a
// reading (before its first, skipped, or all values 0): a forecast made
// from a partly empty window, as after a fresh start, says so although
// it is not stale. The Emitter emits z for t+1 as soon as all receptive nodes
// have slot t, or, failing that, when the clock passes the end of slot t
// plus a lateness allowance; a slot is never emitted twice for a node.
//
// # Model updates
//
// Service.Reload swaps the model between two committed batches: the
// readings held and the last emitted slots move to a State of the new
// bundle (through a Snapshot, which holds no embeddings), so a model
// update neither loses nor repeats a forecast slot, and the service stays
// in its consumer group (a restart hands its partitions over, and may
// repeat the forecasts of its last uncommitted batch).
//
// # State and the log
//
// A State is saved (Snapshot, to Config.StateFile) before every offset
// commit and restored at start, so a crash loses nothing. The log holds
// the same state: as a Service begins to hold the readings partitions, it
// replays into its windows the readings just before the group's committed
// offsets (State.Replay) and moves each sensor's last emitted slot up to
// the newest forecast in the forecasts topic (State.MarkEmitted), so that
// a service without a state file, or a standby on another host that takes
// over, forecasts from whole windows and emits nothing twice
// (Config.NoRebuild turns this off). A sensor whose forecasts have left
// the tail read is not forecast again either: a forecast all of whose
// inputs the replayed windows hold was emitted by the holder that applied
// them, when the forecasts show it ran the same model and no clock check
// could have refused a replayed reading.
//
// # Transactions
//
// Readings written in transactions are read committed: those of an open
// transaction wait until it ends. The markers that end transactions reach
// the service as messages (kafka-go does not hide them); TxnMarker tells
// them from readings, and they are counted, not dead-lettered. kafka-go
// delivers the readings of aborted transactions too, without their
// producer; the service fetches each batch's stretch of a transactional
// partition again and tells them by the fetch's aborted transactions, as
// Kafka's own consumer does, even before their marker comes, and leaves
// them out. The rebuild reads the
// log the same way. A partition stopped at a transaction left open looks
// behind (its high watermark lies past it) and would hold the others back
// while catching up; the service asks the broker for its last stable
// offset and, if everything before it was read, does not wait for it
// (Aligner.Stable).
//
// # Publishing
//
// Publish replays a series (a dataset's steps, slot by slot), and
// PublishReadings publishes readings from any source, in order, keyed by
// sensor: a CSVReader's rows of an exported file or of a pipe, each
// checked first by a Validator as the service will check it. Both write
// again what the brokers did not acknowledge, for as long as their Retry
// says, so that a broker restart does not stop them.
//
// # Security
//
// A Security says how the brokers are reached: TLS (NewTLS), SASL
// (NewSASL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) or both. Credentials
// rotate without a restart: a RotatingSASL takes a new password, a
// KeyPair reads a client certificate (or the HTTPS endpoints' server
// certificate) again, and Authorities read again the authorities the
// HTTPS endpoints check client certificates against; each is used from
// the next connection or handshake on.
//
// # Encoding
//
// Messages are JSON, versioned by a "v" field (Version), so that they are
// readable with any tool (kcat, jq) and any producer language. Readings are
// decoded by a strict hand-written decoder: 255 ns per spec-sized reading
// with no allocation (DecodeReadingInto, reusing the value slice; 346 ns and
// 3 allocations for DecodeReading), against 1457 ns and 5 allocations for
// encoding/json into a struct without any validation (BenchmarkDecodeReading,
// AMD EPYC, one core). That is about 4M readings/s per core, twenty times the
// 200k/s target (5 µs per decode), so a binary format would buy nothing that
// matters. Forecasts and dead letters are written by append-style encoders
// (EncodeForecast: 340 ns, no allocation with a reused buffer).
//
// The per-reading cost is dominated instead by the embedding recompute in
// State.Apply (a Window-step GRU and φ on one row: about 21 µs at hidden 16,
// 81 µs at hidden 64); a forecast from cached embeddings costs 1–4 µs and
// allocates nothing (BenchmarkForecastCached).
package stream
