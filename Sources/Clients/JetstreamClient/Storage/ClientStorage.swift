import Foundation

/// Where a ``Client`` keeps its scopes between runs (docs/offline.md).
///
/// ```swift
/// let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
/// let client = Client(url: gateway, storage: .directory(support.appending(path: "jetstream")))
/// let sync = try await client.fetch(scope)   // the stored copy at once, even offline
/// shape.x = 40
/// try await sync.saved()                     // survives the app being killed from here on
/// ```
public enum ClientStorage: Sendable, Equatable {
    /// Nothing is stored: pending changes live in memory only (the default).
    case none
    /// Each scope's confirmed state, pending change sets (in order, with their keys) and the
    /// client id are kept in a folder of `directory`, which is created when missing.
    case directory(URL)
}
