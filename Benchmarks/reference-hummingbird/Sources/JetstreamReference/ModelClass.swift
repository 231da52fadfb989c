/// A class of the demo schema: its name and its properties in declaration order (the order
/// normalised fragments list them in).
struct ModelClass: Sendable {
    let name: String
    let properties: [PropertySpec]
    private let indexByName: [String: Int]

    init(name: String, properties: [PropertySpec]) {
        self.name = name
        self.properties = properties
        self.indexByName = Dictionary(uniqueKeysWithValues: properties.enumerated().map { ($1.name, $0) })
    }

    func propertyIndex(named name: String) -> Int? { indexByName[name] }

    /// The values of a freshly added object before its fragment's properties are applied.
    var defaultValues: [JSONValue] { properties.map(\.defaultValue) }
}
