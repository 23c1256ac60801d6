// The `write` command.
import ReactiveDefaults

extension Commands {
  static func write(_ arguments: [String]) throws {
    // DOMAIN KEY [TYPE] VALUE...: a type is recognised right after KEY only; every word after it is a value, and
    // '--' makes what follows literal (a key or a value that starts with '-').
    var words = arguments[...]
    var literal = false
    func next(_ what: String) throws -> String? {
      guard var word = words.popFirst() else { return nil }
      if !literal && word == "--" {
        literal = true
        guard let after = words.popFirst() else { return nil }
        word = after
      }
      if !literal && Words.looksLikeOption(word) {
        throw RDefaults.usage(
          "'\(Formatting.escaped(word))' is not a \(what); put '--' before a \(what) that starts with '-'.",
          command: "write")
      }
      return word
    }
    guard let domain = try next("domain"), let key = try next("key") else {
      throw RDefaults.usage("'write' needs a domain, a key and a value.", command: "write")
    }
    guard !key.isEmpty else { throw RDefaults.usage("the key name is empty.", command: "write") }
    var type: String?
    if !literal, let first = words.first {
      if first == "--" {
        literal = true
        words.removeFirst()
      } else if Words.looksLikeOption(first) {
        guard Help.allTypeFlags.contains(first) else {
          throw RDefaults.usage(
            "unknown type '\(Formatting.escaped(first))'; put '--' before a value that starts with '-'.",
            command: "write")
        }
        type = first
        words.removeFirst()
        if words.first == "--" { words.removeFirst() }
      }
    }
    let value = try parseValue(type: type, Array(words))
    let store = try openStore(domain, command: "write", reading: false)
    do {
      try store.set(value, for: DefaultsKey<PropertyListValue?>(key))
    } catch {
      throw Failure(message: "\(error)", hint: nil, code: .failure)
    }
    try save(store)
  }
}
