import Foundation
import Jetstream
import JetstreamModel

enum TestType: Int, ModelEnum {
    case inactive = 0
    case active = 1
}

/// The original's iOS test model, reduced to what these tests exercise.
final class TestModel: ModelObject {
    @Synced var string: String? = nil
    @Synced var integer: Int = 0
    @Synced var testType: TestType = .inactive
    @Synced var uint8: UInt8 = 0
    @Synced var int32: Int32 = 0
    @Synced var int64: Int64 = 0
    @Synced var uint64: UInt64 = 0
    @Synced var numbers: [Double] = []
    @Synced var float32: Float = 0
    @Synced var double64: Double = 0
    @Synced var boolean = false
    @Synced var date: Date? = nil
    @Synced var color: Color? = nil
    @Synced var tags: [String] = []
    @Synced var array: [TestModel] = []
    @Synced var array2: [TestModel] = []
    @Synced var childModel: TestModel? = nil
    @Synced var childModel2: TestModel? = nil
    @Local var localString: String? = nil
    @Local var localModel: TestModel? = nil
}

/// Counts callbacks; also the observer object whose lifetime bounds observations.
final class Counter {
    var count = 0
    func increment() { count += 1 }
}

/// Collects every change set a scope delivers.
final class ChangeLog {
    var changeSets: [RecordedChangeSet] = []

    init(_ scope: Scope) {
        scope.onChanges { [unowned self] in changeSets.append($0) }
    }

    /// The fragments delivered since the last call.
    func take() -> [SyncFragment] {
        defer { changeSets = [] }
        return changeSets.flatMap(\.fragments)
    }
}

extension SyncFragment {
    var summary: String { "\(type.rawValue) \(clsName)" }
}
