import Foundation
import GatewayServer
import JetstreamJSON
import JetstreamModel
import Logging
import ScopeEngine

/// A server of your own on the gateway's library (docs/methods.md): a shopping cart whose
/// `totalPrice` the server keeps equal to the sum of its items, with two methods — `addItem` and
/// `removeItem` — that read the cart and write the items and the total as one change set.
///
/// The schema's write rules keep the total the server's own: `totalPrice` and an item's `price`
/// are writable only with the role `cashier` (no client of this server has it), so a client that
/// POSTs a change set setting them gets `422` with `forbidden`; the methods act as the server.
///
///     swift run CartServer [--port 8090] [--data-dir cart-data]
///     curl -X PUT localhost:8090/v1/scopes/cart-1 -H 'Content-Type: application/json' -d '{"root":{"clsName":"Cart"}}'
///     curl -X POST localhost:8090/v1/scopes/cart-1/methods/addItem -H 'Content-Type: application/json' \
///          -d '{"args":{"name":"tea","price":3.5,"quantity":2}}'
///     # → {…,"method":"addItem","result":{"item":"…","totalPrice":7.0}}
@main
struct CartServer {
    static let schemaYAML = """
        models:
          Cart:
            items: [Item]
            totalPrice: { type: Double, default: 0, min: 0, write: "role:cashier" }
          Item:
            name: { type: String, maxLength: 100 }
            price: { type: Double, min: 0, write: "role:cashier" }
            quantity: { type: Int32, min: 1, default: 1 }
        scopes:
          "cart-*": { root: Cart }
        """

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let port = option("--port", in: &arguments).flatMap { Int($0) } ?? 8090
        let directory = option("--data-dir", in: &arguments) ?? "cart-data"
        do {
            var configuration = GatewayServerConfiguration(dataDirectory: directory)
            configuration.port = port
            configuration.schema = try Schema.parse(yaml: schemaYAML)
            configuration.method("addItem", addItem)
            configuration.method("removeItem", removeItem)
            var logger = Logger(label: "cart")
            logger.logLevel = .warning
            let server = try await GatewayServer.start(configuration, logger: logger)
            FileHandle.standardOutput.write(Data("cart server listening on port \(server.port)\n".utf8))
            try await server.run()
        } catch {
            FileHandle.standardError.write(Data("CartServer: \(error)\n".utf8))
            exit(1)
        }
    }

    /// `{"name": String, "price": Number ≥ 0, "quantity": Int ≥ 1 (default 1)}`: the item is added
    /// at the end and the total goes up by price × quantity, in one change set.
    static let addItem: ScopeMethod.Handler = { call in
        guard case .string(let name)? = call.args["name"], !name.isEmpty else {
            throw MethodRejection("addItem needs a name")
        }
        guard let price = call.args["price"]?.number?.doubleValue, price >= 0 else {
            throw MethodRejection("addItem needs a price of 0 or more")
        }
        let quantity = call.args["quantity"]?.number?.int64Value ?? 1
        guard (1...1_000).contains(quantity) else { throw MethodRejection("quantity must be from 1 to 1000") }
        let cart = try Self.cart(in: call.state)
        let item = UUID()
        let total = cart.total + price * Double(quantity)
        return MethodOutcome(
            fragments: [
                SyncFragment(
                    type: .add, uuid: item, clsName: "Item",
                    properties: [
                        "name": .string(name), "price": .number(JSONNumber(price)),
                        "quantity": .number(JSONNumber(quantity)),
                    ]),
                SyncFragment(
                    type: .change, uuid: call.state.rootUUID, clsName: "Cart",
                    properties: [
                        "items": ["insert": [.string(item.wireString)], "before": .null],
                        "totalPrice": .number(JSONNumber(total)),
                    ]),
            ],
            result: ["item": .string(item.wireString), "totalPrice": .number(JSONNumber(total))],
            // The method keeps the total right itself: the cashier-only rules do not bind it.
            actsAsServer: true)
    }

    /// `{"item": UUID}`: the item leaves the cart and the total goes down by its price × quantity.
    static let removeItem: ScopeMethod.Handler = { call in
        guard let text = call.args["item"]?.string, let item = UUID(wireString: text) else {
            throw MethodRejection("removeItem needs the item's uuid")
        }
        let cart = try Self.cart(in: call.state)
        guard cart.items.contains(item) else { throw MethodRejection("the cart has no item \(text)") }
        let total = cart.items.filter { $0 != item }.reduce(0) { $0 + Self.cost(of: $1, in: call.state) }
        return MethodOutcome(
            fragments: [
                SyncFragment(
                    type: .change, uuid: call.state.rootUUID, clsName: "Cart",
                    properties: [
                        "items": ["remove": [.string(item.wireString)]], "totalPrice": .number(JSONNumber(total)),
                    ])
            ],
            result: ["totalPrice": .number(JSONNumber(total))], actsAsServer: true)
    }

    /// The cart's items and the sum of their prices × quantities, as stored.
    static func cart(in state: ScopeState) throws -> (items: [UUID], total: Double) {
        guard let root = state.object(state.rootUUID), case .references(let items)? = root["items"] else {
            throw MethodRejection("this scope's root is not a Cart")
        }
        return (items, items.reduce(0) { $0 + cost(of: $1, in: state) })
    }

    static func cost(of item: UUID, in state: ScopeState) -> Double {
        guard let object = state.object(item), case .double(let price)? = object["price"] else { return 0 }
        if case .int(let quantity)? = object["quantity"] { return price * Double(quantity) }
        return price
    }

    /// Removes `--name VALUE` from `arguments` and returns VALUE.
    static func option(_ name: String, in arguments: inout [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        let value = arguments[index + 1]
        arguments.removeSubrange(index...(index + 1))
        return value
    }
}
