@main
enum HTTPTestServerMain {
    static func main() {}
}
