import Foundation
import JetstreamModel
import Store

/// Why the engine refused a request. The engine knows nothing of HTTP: the gateway maps each case
/// to a problem+json answer with a stable `type` (`Problem(ScopeError)` in the Gateway module).
///
/// ```swift
/// do { _ = try await engine.create(name: "canvas-1", rootClassName: "Canvas") }
/// catch .scopeExists(let name) { print("\(name) is already there") }
/// ```
public enum ScopeError: Error, Sendable {
    /// The name breaks the naming rule (1–128 characters of `[A-Za-z0-9._~-]`).
    case invalidName(String)
    /// No live scope has this name.
    case scopeNotFound(String)
    /// No scope rule of the schema matches the name, so no scope of that name can exist.
    case noScopeRule(String)
    /// A scope of this name exists already.
    case scopeExists(String)
    /// The root object of a new scope was rejected; no scope was created.
    case rootRejected(FragmentReply)
    /// A change set was rejected whole: one reply per fragment, the failed ones carrying errors.
    case changeSetRejected([FragmentReply])
    /// A merge patch was rejected whole: each error at its JSON Pointer into the patch.
    case mergePatchRejected([MergePatchError])
    /// The scope has no object with this UUID.
    case objectNotFound(scope: String, uuid: UUID)
    /// A change set without fragments.
    case emptyChangeSet
    /// More fragments than ``JetstreamModel/Limits/maxFragmentsPerSet``.
    case tooManyFragments(count: Int, limit: Int)
    /// The version precondition (`If-Match`) names another version than the scope's current one.
    case versionMismatch(current: Int)
    /// The idempotency key was used before with another request body.
    case idempotencyKeyReused(String)
    /// A request with this idempotency key is still being decided or made durable.
    case idempotencyKeyInFlight(String)
    /// A keyed set made before the idempotency window whose key the retained log cannot vouch
    /// for: it may have been applied, so it is not applied (again).
    case idempotencyWindowPassed(key: String, created: Int64, oldestLogged: Int64?, windowMilliseconds: Int64)
    /// The change sets after `since` are no longer retained.
    case historyGone(scope: String, since: Int, oldest: Int, current: Int)
    /// `since` is ahead of the scope's current version.
    case historyAhead(since: Int, current: Int)
    /// The store failed; nothing was acknowledged.
    case store(StoreError)
    /// A read of the past (or a revert) named a version the scope has not reached, or a change set
    /// its retained history does not hold.
    case versionNotFound(scope: String, version: Int, current: Int)
    /// A read of the past named a version older than the retained snapshots and log rebuild.
    case versionGone(scope: String, version: Int, oldest: Int, current: Int)
    /// A revert would undo what later change sets build on: nothing was applied.
    case revertConflict(scope: String, version: Int, conflicts: [RevertConflict])
    /// The scope kept moving while a revert was planned against its log (planned again, a few
    /// times, before this is answered).
    case revertOutdated(scope: String)
    /// A presence member made by another subject.
    case presenceNotYours(client: String)
    /// No presence member with this client id.
    case presenceNotFound(scope: String, client: String)
    /// The scope's presence holds its most members.
    case tooManyPresenceMembers(scope: String, limit: Int)
    /// No method of this name is registered.
    case unknownMethod(String)
    /// The method refused the call (``MethodRejection``): nothing was applied.
    case methodRejected(method: String, reason: String)
    /// The method failed otherwise (it threw another error, or its service answered wrongly):
    /// nothing was applied.
    case methodFailed(method: String, detail: String)
    /// The method's service did not answer within its timeout: nothing was applied.
    case methodTimedOut(method: String, seconds: Double)
    /// The scope moved on every time the method was planned: nothing was applied; retry.
    case methodOutdated(method: String, attempts: Int)

    /// A sentence a person can act on.
    public var detail: String {
        switch self {
        case .invalidName(let name):
            "invalid scope name '\(name.prefix(140))': use 1–128 characters of A–Z, a–z, 0–9, '.', '_', '~', '-'"
        case .scopeNotFound(let name): "no scope named '\(name)'"
        case .noScopeRule(let name): "no scope rule of the schema matches the name '\(name)'"
        case .scopeExists(let name): "scope '\(name)' already exists"
        case .rootRejected: "the root object was rejected; no scope was created"
        case .changeSetRejected(let replies):
            "\(replies.filter { $0.error != nil }.count) of \(replies.count) fragments were rejected; nothing was applied"
        case .mergePatchRejected(let errors):
            "the merge patch was rejected (\(errors.count) error\(errors.count == 1 ? "" : "s")); nothing was applied"
        case .objectNotFound(let scope, let uuid): "scope '\(scope)' has no object \(uuid.wireString)"
        case .emptyChangeSet: "a change set needs at least one fragment"
        case .tooManyFragments(let count, let limit):
            "the change set has \(count) fragments; at most \(limit) are accepted"
        case .versionMismatch(let current): "If-Match does not name the scope's version \(current)"
        case .idempotencyKeyReused(let key):
            "Idempotency-Key '\(key)' was already used for a different request body; use a new key"
        case .idempotencyKeyInFlight(let key):
            "a request with Idempotency-Key '\(key)' is still in flight; retry once it is answered"
        case .idempotencyWindowPassed(let key, let created, let oldest, let window):
            Self.windowPassedMessage(key: key, created: created, oldest: oldest, window: window)
        case .historyGone(let scope, let since, let oldest, _):
            "change sets after version \(since) of '\(scope)' are no longer retained; "
                + "the oldest version to read from is \(oldest): GET the scope's state instead"
        case .historyAhead(let since, let current): "since=\(since) is ahead of the scope's version \(current)"
        case .store(let error): "the store failed: \(error)"
        case .versionNotFound(let scope, let version, let current):
            version > current
                ? "scope '\(scope)' is at version \(current); version \(version) does not exist yet"
                : "scope '\(scope)' retains no change set \(version)"
        case .versionGone(let scope, let version, let oldest, _):
            "version \(version) of '\(scope)' is no longer retained; the oldest readable version is \(oldest)"
        case .revertConflict(let scope, let version, let conflicts):
            "change set \(version) of '\(scope)' cannot be reverted: \(conflicts.count) later change"
                + (conflicts.count == 1 ? " builds" : "s build") + " on what it changed; nothing was applied"
        case .revertOutdated(let scope):
            "scope '\(scope)' kept changing while the revert was planned; retry"
        case .presenceNotYours(let client):
            "presence member '\(client)' belongs to another subject; choose another client id"
        case .presenceNotFound(let scope, let client): "scope '\(scope)' has no presence member '\(client)'"
        case .tooManyPresenceMembers(let scope, let limit):
            "scope '\(scope)' has \(limit) presence members, its limit (--max-presence-members); retry later"
        case .unknownMethod(let name): "the server has no method '\(name.prefix(140))'"
        case .methodRejected(let method, let reason): "method '\(method)' refused the call: \(reason)"
        case .methodFailed(let method, let detail): "method '\(method)' failed: \(detail); nothing was applied"
        case .methodTimedOut(let method, let seconds):
            "method '\(method)' did not answer within \(seconds) s (--method-timeout); nothing was applied"
        case .methodOutdated(let method, let attempts):
            "scope kept changing while method '\(method)' was planned (\(attempts) attempts); nothing was applied, retry"
        }
    }

    /// Whether the outcome is final for the request body and so stored under its idempotency key
    /// and replayed: a rejected change set or patch, or a failed version precondition. Store failures and
    /// unknown scopes are not stored; a retry tries again.
    public var isFinalForIdempotency: Bool {
        switch self {
        case .changeSetRejected, .mergePatchRejected, .versionMismatch, .revertConflict, .methodRejected: true
        default: false
        }
    }
}

/// Scope names: 1–128 characters of `[A-Za-z0-9._~-]` (URL-safe without escaping).
public enum ScopeName {
    public static let maxLength = 128

    public static func isValid(_ name: String) -> Bool {
        isToken(name, maxLength: maxLength)
    }

    /// Whether `text` is 1…`maxLength` characters of `[A-Za-z0-9._~-]`, the URL-safe set scope
    /// names and presence client ids share.
    public static func isToken(_ text: String, maxLength: Int) -> Bool {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }

    /// Throws ``ScopeError/invalidName(_:)`` naming the rule when `name` breaks it.
    public static func validate(_ name: String) throws(ScopeError) {
        guard isValid(name) else { throw .invalidName(name) }
    }
}

/// A precondition on the scope's version (the gateway parses it from `If-Match`).
public enum VersionCondition: Sendable, Equatable {
    /// Any version (`*`).
    case any
    /// One of these versions.
    case versions(Set<Int>)
    /// Nothing matches (tags none of which is a version of ours).
    case none

    public func matches(_ version: Int) -> Bool {
        switch self {
        case .any: true
        case .none: false
        case .versions(let versions): versions.contains(version)
        }
    }
}

/// A later change set that touched what a revert would undo: the object, the property (nil when
/// the object itself is added or removed by the revert) and the later version.
public struct RevertConflict: Sendable, Hashable {
    public var uuid: UUID
    public var property: String?
    public var version: Int

    public init(uuid: UUID, property: String?, version: Int) {
        self.uuid = uuid
        self.property = property
        self.version = version
    }
}

extension ScopeError {
    static func windowPassedMessage(key: String, created: Int64, oldest: Int64?, window: Int64) -> String {
        let made = ChangeTime.rfc3339(millisecondsSince1970: created)
        var message = "the change set with Idempotency-Key '\(key)' was made at \(made), longer ago than "
        message +=
            "idempotency records are kept (\(window / 1000) s), and the scope's log no longer reaches back to then"
        if let oldest {
            message += " (its oldest change set is from \(ChangeTime.rfc3339(millisecondsSince1970: oldest)))"
        }
        message += ": it may have been applied already, so it is not applied again; "
        return message + "read the scope and make the change again if it is still wanted"
    }
}
