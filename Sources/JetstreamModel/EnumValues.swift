/// The allowed values of an enum property: all strings or all integers.
public enum EnumValues: Sendable, Hashable {
    case strings([String])
    case integers([Int64])

    var count: Int {
        switch self {
        case .strings(let values): values.count
        case .integers(let values): values.count
        }
    }

    var firstValue: Value? {
        switch self {
        case .strings(let values): values.first.map(Value.string)
        case .integers(let values): values.first.map(Value.int)
        }
    }

    func contains(_ value: Value) -> Bool {
        switch (self, value) {
        case (.strings(let values), .string(let string)): values.contains(string)
        case (.integers(let values), .int(let integer)): values.contains(integer)
        default: false
        }
    }
}

extension EnumValues {
    var listDescription: String {
        switch self {
        case .strings(let values): "[" + values.joined(separator: ", ") + "]"
        case .integers(let values): "[" + values.map(String.init).joined(separator: ", ") + "]"
        }
    }
}
