// The `delete` command.
@_spi(Tools) import ReactiveDefaults

extension Commands {
  static func delete(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "delete")
    try words.expect(1...2, "'delete' takes a domain and at most one key")
    let domain = words.positional[0]
    let store = try openStore(domain, command: "delete", reading: false)
    guard exists(store) else { throw missingDomain(domain) }
    guard words.positional.count == 2 else {
      do { return try store.removeSuite() } catch { throw Failure(message: "\(error)", hint: nil, code: .failure) }
    }
    _ = try value(of: words.positional[1], in: store, domain: domain)
    store.reset(DefaultsKey<PropertyListValue?>(words.positional[1]))
    try save(store)
  }
}
