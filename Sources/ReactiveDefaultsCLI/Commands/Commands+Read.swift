// The `read` and `read-type` commands.
import ReactiveDefaults

extension Commands {
  static func read(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "read")
    try words.expect(0...2, "'read' takes at most a domain and a key")
    let positional = words.positional
    guard let domain = positional.first else {
      for name in domainNames() {
        let store = try openStore(name, command: "read", reading: true)
        RDefaults.printOut(name + " = " + Formatting.listing(.dictionary(contents(store))))
      }
      return
    }
    let store = try openExisting(domain, command: "read")
    guard positional.count == 2 else { return RDefaults.printOut(Formatting.listing(.dictionary(contents(store)))) }
    RDefaults.printOut(Formatting.plain(try value(of: positional[1], in: store, domain: domain)))
  }

  static func readType(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "read-type")
    try words.expect(2...2, "'read-type' needs a domain and a key")
    let store = try openExisting(words.positional[0], command: "read-type")
    let value = try value(of: words.positional[1], in: store, domain: words.positional[0])
    RDefaults.printOut("Type is \(Formatting.typeName(value))")
  }
}
