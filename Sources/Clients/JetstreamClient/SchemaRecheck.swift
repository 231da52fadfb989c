import JetstreamModel

/// What a sync does with a whole state (`event: reset` or `snapshot`) once it has read
/// `GET /v1/schema` again. A stream resumed across a server restart with a changed schema gets a
/// `reset` carrying the state under the new schema; the app's model classes were checked against
/// the old one at `fetch`, so they are checked again before the state is applied. Pure: the
/// answer in, the decision out.
///
/// ```
///   304 (If-None-Match: the tag the sync has) ─▶ unchanged: apply the state
///   200, the same schema ──────────────────────▶ unchanged: apply the state
///   200, another schema the classes fit ───────▶ changed: adopt it (and its ETag), apply the state
///   200, another schema they do not fit ───────▶ mismatch: do not apply it; the sync stops
///   no answer · another status · not a schema ─▶ unreadable: drop the stream, resume after a backoff
/// ```
///
/// ```swift
/// let answer = try? await client.request("GET", "/v1/schema", headers: ["If-None-Match": tag])
/// switch SchemaRecheck(answer: answer, current: engine.schema, model: modelSchema,
///                      scope: "canvas-1", rootClass: "Canvas") { … }
/// ```
enum SchemaRecheck: Sendable, Equatable {
    /// The schema the sync already has.
    case unchanged
    /// Another schema that the model classes still fit: the sync takes it from now on; its `ETag`
    /// is the next read's `If-None-Match`.
    case changed(Schema, entityTag: String?)
    /// Another schema that the model classes no longer fit: one line per difference, as
    /// ``ClientError/schemaMismatch(_:)`` says them at `fetch`.
    case mismatch([String])
    /// No schema came back (why, for a log). The state is not applied: the stream is dropped and
    /// resumed after a backoff from the same point, so the server sends the state again.
    case unreadable(String)

    /// The decision for `answer` (nil: no answer), given the schema the sync has (`current`) and
    /// the one the app's classes form (`model`) for scope `name` with a `rootClass` root.
    init(answer: Client.Answer?, current: Schema, model: Schema, scope name: String, rootClass: String) {
        guard let answer else {
            self = .unreadable("GET /v1/schema: no answer")
            return
        }
        switch answer.status {
        case 304:
            self = .unchanged
        case 200:
            let served: Schema
            do {
                served = try Schema.parse(json: answer.body)
            } catch {
                self = .unreadable("GET /v1/schema: \(error)")
                return
            }
            if served == current {
                self = .unchanged
                return
            }
            let problems = Client.differences(model, scope: name, rootClass: rootClass, against: served)
            self = problems.isEmpty ? .changed(served, entityTag: answer.entityTag) : .mismatch(problems)
        case let status:
            self = .unreadable("GET /v1/schema: \(status)")
        }
    }
}
