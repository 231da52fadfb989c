/// A write queued for the commit thread. Each runs inside the batch transaction under its own savepoint,
/// so one failing operation leaves the others of its batch intact.
enum WriteOperation: Sendable {
    typealias Completion<Value> = @Sendable (Result<Value, StoreError>) -> Void

    case append(AppendRequest, Completion<Void>)
    case recordRejection(scope: String, IdempotencyRecord, Completion<Void>)
    case createScope(ScopeDescriptor, snapshot: [UInt8], Completion<Int64>)
    case deleteScope(String, Completion<Int64>)
    case writeSnapshot(scope: String, version: Int64, snapshot: [UInt8], Completion<Void>)
    case applyRetention(Completion<Int>)
    case expireIdempotencyRecords(Completion<Int>)

    /// Completes the operation with `error` without running it (store closed, transaction failed).
    func fail(_ error: StoreError) {
        switch self {
        case .append(_, let completion), .recordRejection(_, _, let completion),
            .writeSnapshot(_, _, _, let completion):
            completion(.failure(error))
        case .createScope(_, _, let completion), .deleteScope(_, let completion): completion(.failure(error))
        case .applyRetention(let completion), .expireIdempotencyRecords(let completion): completion(.failure(error))
        }
    }
}
