import JetstreamModel
import Synchronization
import Testing

@testable import ScopeEngine

/// The scope directory's transitions and their interleavings, as values: each test lays out the
/// order in which a follower's copy, a creation, a delete here and a deletion elsewhere reach the
/// directory, and checks what is hosted, what the name's tombstone is, and the actions returned.
/// The handles are real (no store, no subscribers): a transition reads their committed version.
@Suite("Scope directory: what a name is, and the transitions that change it")
struct ScopeDirectoryTests {
    typealias Directory = ScopeDirectory
    let name = "canvas-1"

    /// A handle of `canvas-1` (a creation's, or a copy restored from the store) at `version`.
    static func handle(at version: Int) -> ScopeHandle {
        let schema = Schema.demo
        let rootClass = schema.rootClass(forScope: "canvas-1")!
        let state = try! ScopeState.create(rootClass: rootClass, schema: schema).withVersion(version)
        return ScopeHandle(
            name: "canvas-1", state: state, oldestResumable: version, resumeBufferSize: 4,
            subscribers: DirectSubscribers())
    }

    /// `handle` committed up to `version` (a write here or one caught up from elsewhere).
    static func commit(_ handle: ScopeHandle, to version: Int) {
        handle.runtime.withLock { $0.committed = $0.committed.withVersion(version) }
    }

    /// A directory hosting `handle` as a follower's load would.
    static func hosting(_ handle: ScopeHandle) -> Directory {
        var directory = Directory()
        #expect(directory.loaded(handle, readAt: handle.version, replacing: false) == .init(live: handle))
        return directory
    }

    // MARK: Loading copies

    @Test("a copy is hosted when the name is free; a live handle is kept unless replacing")
    func loadingKeepsTheLiveHandle() {
        let live = Self.handle(at: 0)
        var directory = Self.hosting(live)
        let copy = Self.handle(at: 4)
        #expect(directory.loaded(copy, readAt: 4, replacing: false) == .init(live: live))
        #expect(directory[name] === live)
    }

    @Test("a reload replaces a handle behind the store and retires it")
    func aReloadReplacesAHandleBehind() {
        let live = Self.handle(at: 0)
        var directory = Self.hosting(live)
        let copy = Self.handle(at: 4)
        #expect(directory.loaded(copy, readAt: 4, replacing: true) == .init(live: copy, actions: [.retire(live)]))
        #expect(directory[name] === copy)
        // Hosting the same handle again retires nothing.
        #expect(directory.loaded(copy, readAt: 4, replacing: true) == .init(live: copy))
    }

    @Test("a reload never replaces a handle ahead of its copy (it committed meanwhile)")
    func aReloadKeepsAHandleAhead() {
        let live = Self.handle(at: 0)
        var directory = Self.hosting(live)
        let copy = Self.handle(at: 0)
        Self.commit(live, to: 2)
        #expect(directory.loaded(copy, readAt: 0, replacing: true) == .init(live: live))
        #expect(directory[name] === live)
        // As far as the copy: replaced (the reload is for a handle whose log no longer continues).
        #expect(directory.loaded(copy, readAt: 2, replacing: true) == .init(live: copy, actions: [.retire(live)]))
    }

    @Test("the scopes recovered at start-up are hosted")
    func recoveredScopesAreHosted() {
        var directory = Directory()
        let first = Self.handle(at: 3)
        #expect(directory.recovered([first]).isEmpty)
        #expect(directory[name] === first)
        #expect(directory.hosted.count == 1)
    }

    // MARK: A copy read before a delete

    @Test("a copy read before a delete here is not hosted while the delete is in flight, nor after it")
    func aCopyReadBeforeADeleteIsNotHosted() {
        let live = Self.handle(at: 2)
        var directory = Self.hosting(live)
        // A follower read the scope at version 2 and restores it; meanwhile a DELETE begins.
        let copy = Self.handle(at: 2)
        let began = directory.deleteBegan(name)
        #expect(began?.taken === live)
        #expect(began?.actions == [.markDeleted(live)])
        #expect(directory.tombstones[name] == .deleting)
        // In flight, no copy of any version is hosted, replacing or not.
        #expect(directory.loaded(copy, readAt: 2, replacing: false) == .init(live: nil))
        #expect(directory.loaded(copy, readAt: 9, replacing: true) == .init(live: nil))
        #expect(directory.isDeleted(name, readAt: 9))
        #expect(directory[name] == nil)
        // Durable at version 2: a copy read at or below it is of the deleted scope.
        #expect(directory.deleteCommitted(name, version: 2, taken: live) == [.endSubscribers(live, deletedAt: 2)])
        #expect(directory.tombstones[name] == .at(2))
        #expect(directory.loaded(copy, readAt: 2, replacing: false) == .init(live: nil))
        #expect(directory[name] == nil)
    }

    @Test("a copy of a later scope of the name, read past its tombstone, is hosted")
    func aCopyPastTheTombstoneIsHosted() {
        let live = Self.handle(at: 2)
        var directory = Self.hosting(live)
        _ = directory.deleteBegan(name)
        _ = directory.deleteCommitted(name, version: 2, taken: live)
        let later = Self.handle(at: 3)
        #expect(!directory.isDeleted(name, readAt: 3))
        #expect(directory.loaded(later, readAt: 3, replacing: false) == .init(live: later))
        #expect(directory[name] === later)
    }

    // MARK: Creations

    @Test("a creation is hosted on a free name")
    func aCreationIsHosted() {
        var directory = Directory()
        let created = Self.handle(at: 0)
        #expect(directory.created(created) == .init(live: created))
        #expect(directory[name] === created)
    }

    @Test("a creation keeps a follower's copy of its scope that is as far or further")
    func aCreationKeepsACopyAsFar() {
        // The follower loaded the new scope from its creation's notice before the creation finished.
        let copy = Self.handle(at: 0)
        var directory = Self.hosting(copy)
        let created = Self.handle(at: 0)
        #expect(directory.created(created) == .init(live: copy))
        // The copy took a write from elsewhere: still kept.
        Self.commit(copy, to: 1)
        #expect(directory.created(created) == .init(live: copy))
        #expect(directory[name] === copy)
    }

    @Test("a creation replaces and retires a copy behind it (of an earlier scope of the name)")
    func aCreationReplacesACopyBehind() {
        let earlier = Self.handle(at: 3)
        var directory = Self.hosting(earlier)
        let created = Self.handle(at: 5)
        #expect(directory.created(created) == .init(live: created, actions: [.retire(earlier)]))
        #expect(directory[name] === created)
    }

    @Test("a creation finishing after its scope was deleted hosts nothing and takes no writes")
    func aCreationAfterItsDeletionIsNotHosted() {
        // The follower hosted the new scope, a DELETE removed it; the creation's handle comes last.
        let copy = Self.handle(at: 0)
        var directory = Self.hosting(copy)
        _ = directory.deleteBegan(name)
        _ = directory.deleteCommitted(name, version: 0, taken: copy)
        let created = Self.handle(at: 0)
        #expect(directory.created(created) == .init(live: nil, actions: [.markDeleted(created)]))
        #expect(directory[name] == nil)
    }

    @Test("a creation finishing while a delete is in flight is hosted (the store accepted it after)")
    func aCreationDuringADeleteIsHosted() {
        let earlier = Self.handle(at: 2)
        var directory = Self.hosting(earlier)
        _ = directory.deleteBegan(name)
        let created = Self.handle(at: 3)
        #expect(directory.created(created) == .init(live: created))
        #expect(directory[name] === created)
        #expect(directory.tombstones[name] == .deleting)
    }

    // MARK: Deletes here

    @Test("deleting a name nothing hosts changes nothing")
    func deletingAnUnhostedName() {
        var directory = Directory()
        #expect(directory.deleteBegan(name) == nil)
        #expect(directory.tombstones[name] == nil)
    }

    @Test("a delete committed evicts a copy hosted meanwhile at or below its version")
    func aDeleteEvictsACopyHostedMeanwhile() {
        // A follower hosted the new scope before its creation finished; a DELETE took that copy;
        // the creation's own handle was then hosted (a delete in flight does not refuse it).
        let copy = Self.handle(at: 0)
        var directory = Self.hosting(copy)
        _ = directory.deleteBegan(name)
        let created = Self.handle(at: 0)
        #expect(directory.created(created) == .init(live: created))
        #expect(
            directory.deleteCommitted(name, version: 0, taken: copy) == [
                .endSubscribers(copy, deletedAt: 0), .evict(created, deletedAt: 0),
            ])
        #expect(directory[name] == nil)
        #expect(directory.tombstones[name] == .at(0))
    }

    @Test("a delete committed leaves a later scope of the name hosted")
    func aDeleteKeepsALaterScope() {
        let live = Self.handle(at: 3)
        var directory = Self.hosting(live)
        _ = directory.deleteBegan(name)
        // Created again after the store's delete: it continues after the tombstone, at 4.
        let later = Self.handle(at: 4)
        #expect(directory.created(later) == .init(live: later))
        #expect(directory.deleteCommitted(name, version: 3, taken: live) == [.endSubscribers(live, deletedAt: 3)])
        #expect(directory[name] === later)
    }

    @Test("a delete the store refuses puts the handle back and lifts the tombstone")
    func aFailedDeleteRestores() {
        let live = Self.handle(at: 2)
        var directory = Self.hosting(live)
        _ = directory.deleteBegan(name)
        #expect(directory.deleteFailed(name, taken: live) == .init(live: live))
        #expect(directory[name] === live)
        #expect(directory.tombstones[name] == nil)
        #expect(!directory.isDeleted(name, readAt: 2))
    }

    @Test("a delete the store refuses retires its handle when a copy took the name meanwhile")
    func aFailedDeleteYieldsToACopy() {
        let live = Self.handle(at: 2)
        var directory = Self.hosting(live)
        _ = directory.deleteBegan(name)
        let created = Self.handle(at: 2)
        _ = directory.created(created)
        #expect(directory.deleteFailed(name, taken: live) == .init(live: created, actions: [.retire(live)]))
        #expect(directory[name] === created)
        #expect(directory.tombstones[name] == nil)
    }

    @Test("a delete that finds the scope gone from the store leaves a tombstone at the handle's version")
    func aDeleteFindsTheScopeGone() {
        let live = Self.handle(at: 5)
        var directory = Self.hosting(live)
        _ = directory.deleteBegan(name)
        #expect(directory.deleteFoundGone(name, taken: live) == [.endSubscribers(live, deletedAt: 5)])
        #expect(directory.tombstones[name] == .at(5))
        #expect(directory.loaded(Self.handle(at: 5), readAt: 5, replacing: false) == .init(live: nil))
        #expect(directory[name] == nil)
    }

    // MARK: Deletions elsewhere

    @Test("a deletion elsewhere evicts the handle and raises the tombstone")
    func aDeletionElsewhereEvicts() {
        let live = Self.handle(at: 4)
        var directory = Self.hosting(live)
        #expect(directory.deletedElsewhere(name, version: 4, handle: live) == [.evict(live, deletedAt: 4)])
        #expect(directory[name] == nil)
        #expect(directory.tombstones[name] == .at(4))
        // A copy read before the deletion, hosted after it, stays out.
        #expect(directory.loaded(Self.handle(at: 4), readAt: 4, replacing: true) == .init(live: nil))
        #expect(directory[name] == nil)
    }

    @Test("a deletion elsewhere leaves a handle that took the place of the one it names")
    func aDeletionElsewhereOfAReplacedHandle() {
        let old = Self.handle(at: 1)
        var directory = Self.hosting(old)
        let reloaded = Self.handle(at: 6)
        _ = directory.loaded(reloaded, readAt: 6, replacing: true)
        #expect(directory.deletedElsewhere(name, version: 1, handle: old).isEmpty)
        #expect(directory[name] === reloaded)
        #expect(directory.tombstones[name] == .at(1))
    }

    @Test("a tombstone only rises, and a delete in flight here stays in flight")
    func tombstonesRise() {
        let live = Self.handle(at: 7)
        var directory = Self.hosting(live)
        _ = directory.deletedElsewhere(name, version: 7, handle: live)
        _ = directory.deletedElsewhere(name, version: 3, handle: live)
        #expect(directory.tombstones[name] == .at(7))

        let other = Self.handle(at: 2)
        var deleting = Self.hosting(other)
        _ = deleting.deleteBegan(name)
        _ = deleting.deletedElsewhere(name, version: 2, handle: other)
        #expect(deleting.tombstones[name] == .deleting)
        #expect(deleting.loaded(Self.handle(at: 9), readAt: 9, replacing: false) == .init(live: nil))
    }
}
