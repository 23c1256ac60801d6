import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// A save applies the writes made since the last one to the file's entries as this process last saved them, instead of
/// copying corelibs' whole domain: after any mix of writes, removals and plain `UserDefaults` writes, saved many times,
/// the file holds exactly what memory holds.
@Suite(.linuxOnly) struct SavedEntriesTests {
  @Test func theFileEqualsMemoryAfterWritesRemovalsAndPlainWritesAcrossSaves() throws {
    let name = makeSuiteName()
    let path = preferencesFolder.appendingPathComponent("\(name).plist").path
    let store = try #require(DefaultsStore(suiteName: name))
    let plain = try #require(UserDefaults(suiteName: name))
    var generator = SystemRandomNumberGenerator()
    for round in 0..<40 {
      for _ in 0..<25 {
        let name = "key\(Int.random(in: 0..<60, using: &generator))"
        let key = DefaultsKey<Int?>(name)
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<6: store[key] = round
        case 6..<8: store[key] = nil
        case 8: plain.set(-round, forKey: name)
        default: plain.removeObject(forKey: name)
        }
      }
      store.flush()
      let root = try PropertyListSerialization.propertyList(
        from: try Data(contentsOf: URL(fileURLWithPath: path)), format: nil)
      let onDisk = try #require(root as? [String: Any]).compactMapValues(PropertyListValue.init(foundationObject:))
      let memory = (plain.persistentDomain(forName: name) ?? [:]).compactMapValues(
        PropertyListValue.init(foundationObject:))
      #expect(onDisk == memory, "round \(round)")
    }
    UserDefaults(suiteName: name)?.removePersistentDomain(forName: name)
  }
}
