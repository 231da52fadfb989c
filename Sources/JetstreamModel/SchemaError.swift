/// What is wrong with a schema, naming the file, the class and the property where it applies.
///
/// ```swift
/// // models.yaml: class Shape, property width: min must be a number, got a string
/// ```
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String?
    public var className: String?
    public var property: String?
    public var message: String

    public init(file: String? = nil, className: String? = nil, property: String? = nil, message: String) {
        self.file = file
        self.className = className
        self.property = property
        self.message = message
    }

    public var description: String {
        var location: [String] = []
        if let className { location.append("class \(className)") }
        if let property { location.append("property \(property)") }
        let place = location.joined(separator: ", ")
        let prefix = [file, place.isEmpty ? nil : place].compactMap { $0 }.joined(separator: ": ")
        return prefix.isEmpty ? message : "\(prefix): \(message)"
    }

    func inFile(_ file: String?) -> SchemaError {
        var copy = self
        copy.file = copy.file ?? file
        return copy
    }
}
