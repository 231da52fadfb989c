import Foundation

/// The original's connection options (`WebSocketConnectionOptions(url:)`; its README spelled it
/// `WebsocketConnectionOptions`). The gateway has no WebSocket endpoint: ``Client/init(options:)``
/// turns the `ws://` / `wss://` URL into the gateway's `http://` / `https://` base URL.
@available(*, deprecated, message: "the gateway speaks HTTP: use Client(url: URL(string: \"http://host:8080\")!)")
public struct WebSocketConnectionOptions: Sendable {
    /// The server's URL as the original took it (`ws://`, `wss://`; `http(s)://` is taken as is).
    public var url: URL?

    public init(url: URL) {
        self.url = url
    }

    /// The original README passed the URL as a string; nil when it is no URL.
    public init(url: String) {
        self.url = URL(string: url)
    }

    /// The gateway's base URL for `url`: the WebSocket schemes become their HTTP ones, the rest
    /// stays; nil for any other scheme.
    var gatewayURL: URL? {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        switch components.scheme?.lowercased() {
        case "ws", "http": components.scheme = "http"
        case "wss", "https": components.scheme = "https"
        default: return nil
        }
        return components.url
    }
}

/// The original README's spelling of ``WebSocketConnectionOptions``.
@available(*, deprecated, message: "the gateway speaks HTTP: use Client(url: URL(string: \"http://host:8080\")!)")
public typealias WebsocketConnectionOptions = WebSocketConnectionOptions
