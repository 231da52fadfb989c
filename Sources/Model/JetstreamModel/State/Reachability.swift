import Foundation
import HashTreeCollections

/// Decides which objects can no longer be reached from the root, looking only at the objects that
/// may have changed: those that lost an incoming reference and those just added.
///
/// For each candidate it searches *upward* through parents, depth first, for the root or an object
/// already known to be reachable. In a tree that costs the candidate's depth. When the search fails,
/// every object it visited is unreachable (no ancestor of theirs is the root), so they leave, and
/// their children become candidates in turn. Unreachable cycles fail like any other search, so they
/// leave too. Results are memoised for the whole change set.
struct Reachability {
    private let rootUUID: UUID
    private var reachable: Set<UUID> = []
    private var unreachable: Set<UUID> = []

    init(rootUUID: UUID) {
        self.rootUUID = rootUUID
        reachable.insert(rootUUID)
    }

    /// Every object that became unreachable, in the order found.
    mutating func unreachable(
        startingFrom candidates: [UUID], in objects: TreeDictionary<UUID, ScopeObject>
    ) -> [UUID] {
        var found: [UUID] = []
        var queue = candidates
        var next = 0
        while next < queue.count {
            let candidate = queue[next]
            next += 1
            guard objects[candidate] != nil else { continue }
            let newlyUnreachable = search(from: candidate, in: objects)
            for uuid in newlyUnreachable {
                found.append(uuid)
                for child in objects[uuid]?.referencedUUIDs ?? [] where !unreachable.contains(child) {
                    queue.append(child)
                }
            }
        }
        return found
    }

    /// Returns the objects proved unreachable by this search (empty when `start` is reachable).
    private mutating func search(from start: UUID, in objects: TreeDictionary<UUID, ScopeObject>) -> [UUID] {
        if reachable.contains(start) || unreachable.contains(start) { return [] }
        // Fast path without allocations: a parent already known reachable (the usual case when
        // candidates come parents-first, as in an import or a subtree added in pre-order).
        let startParents = objects[start]?.parents ?? ParentSet()
        var cursor = startParents.startCursor
        while let parent = startParents.next(&cursor) {
            if reachable.contains(parent) {
                reachable.insert(start)
                return []
            }
        }
        struct Frame {
            let uuid: UUID
            let parents: ParentSet
            var cursor: ParentSet.Cursor
        }
        func frame(_ uuid: UUID) -> Frame {
            let parents = objects[uuid]?.parents ?? ParentSet()
            return Frame(uuid: uuid, parents: parents, cursor: parents.startCursor)
        }
        var visited: [UUID] = [start]
        var seen: Set<UUID> = [start]
        var stack = [frame(start)]
        while !stack.isEmpty {
            guard let parent = stack[stack.count - 1].parents.next(&stack[stack.count - 1].cursor) else {
                stack.removeLast()
                continue
            }
            if reachable.contains(parent) {
                for entry in stack { reachable.insert(entry.uuid) }
                return []
            }
            if unreachable.contains(parent) || seen.contains(parent) { continue }
            seen.insert(parent)
            visited.append(parent)
            stack.append(frame(parent))
        }
        unreachable.formUnion(visited)
        return visited
    }
}
