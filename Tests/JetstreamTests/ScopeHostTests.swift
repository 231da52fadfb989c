import CanvasModel
import Foundation
import Jetstream
import JetstreamModel
import Testing

/// A canvas that counts its own queued redraws and recorded change sets in local properties, so the
/// counts live inside the host's isolation domain.
private final class CountingCanvas: ModelObject {
    @Synced var name: String? = nil
    @Synced var shapes: [Shape] = []
    @Local var redraws = 0
    @Local var changeSets = 0
}

@Suite struct ScopeHostTests {
    private func makeScope() -> Scope {
        let canvas = CountingCanvas()
        let scope = Scope(root: canvas)
        canvas.observeChange(canvas, keys: ["name", "shapes"]) { [unowned canvas] in canvas.redraws += 1 }
        scope.onChanges { [unowned canvas] _ in canvas.changeSets += 1 }
        return scope
    }

    private func counts(_ scope: Scope) -> [Int] {
        let canvas = scope.root as! CountingCanvas
        return [canvas.redraws, canvas.changeSets]
    }

    @Test func queuedDeliveryHappensInALaterJobOnTheHost() async {
        let host = ScopeHost(scope: makeScope())
        let during = await host.withScope { scope in
            let canvas = scope.root as! CountingCanvas
            canvas.name = "a"
            canvas.name = "b"
            canvas.shapes.append(Shape())
            return counts(scope)
        }
        #expect(during == [0, 0])
        await host.waitUntilDelivered()
        #expect(await host.withScope { counts($0) } == [1, 1])

        await host.withScope { scope in (scope.root as! CountingCanvas).name = "c" }
        await host.waitUntilDelivered()
        #expect(await host.withScope { counts($0) } == [2, 2])
    }

    @Test func concurrentTasksShareTheScopeThroughTheHost() async {
        let host = ScopeHost(scope: makeScope())
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    await host.withScope { scope in
                        (scope.root as! CountingCanvas).shapes.append(Shape())
                        _ = index
                    }
                }
            }
        }
        await host.waitUntilDelivered()
        let shapes = await host.withScope { scope in (scope.root as! CountingCanvas).shapes.count }
        let objects = await host.withScope { $0.objectCount }
        #expect(shapes == 20)
        #expect(objects == 21)
        let changeSets = await host.withScope { counts($0)[1] }
        #expect(changeSets >= 1 && changeSets <= 20)
    }
}
