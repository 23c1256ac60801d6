// The `rename` command.
import ReactiveDefaults

extension Commands {
  static func rename(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "rename")
    try words.expect(3...3, "'rename' needs a domain, the old key and the new key")
    let (domain, old, new) = (words.positional[0], words.positional[1], words.positional[2])
    guard !new.isEmpty else { throw RDefaults.usage("the new key name is empty.", command: "rename") }
    let store = try openExisting(domain, command: "rename")
    // By exact characters: one spelling of a name renamed to another (NFD to NFC) is a rename.
    guard PropertyListKey(old) != PropertyListKey(new) else {
      // Nothing to move, but the key must exist.
      _ = try value(of: old, in: store, domain: domain)
      return
    }
    do {
      try store.edit { tx in
        let oldKey = DefaultsKey<PropertyListValue?>(old)
        guard let value = tx[oldKey] else { throw missingKey(old, domain: domain) }
        tx[DefaultsKey<PropertyListValue?>(new)] = value
        tx[oldKey] = nil
      }
    } catch let failure as Failure {
      throw failure
    } catch {
      throw Failure(message: "\(error)", hint: nil, code: .failure)
    }
  }
}
