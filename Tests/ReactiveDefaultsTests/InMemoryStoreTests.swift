import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct InMemoryStoreTests {
  @Test func startsWithTheGivenValuesAndReportsMismatches() {
    let store = DefaultsStore.inMemory(["count": .integer(3), "volume": .string("loud")])
    let issues = Recorder<DefaultsError>()
    store.issueHandler = { issues.append($0) }
    #expect(store[.count] == 3)
    #expect(store[.volume] == 0.5)
    #expect(issues.values == [.typeMismatch(key: "volume", expected: "Double", found: "String")])
  }

  @Test func eachStoreIsNewAndIsolated() {
    let first = DefaultsStore.inMemory()
    let second = DefaultsStore.inMemory()
    first[.count] = 1
    #expect(second[.count] == 0)
    #expect(first.userDefaults.object(forKey: "count") == nil, "the store wrote to UserDefaults")
    #expect(first.suiteName == nil)
  }

  @Test func flushSaveAndRefreshDoNothingHarmful() throws {
    let store = DefaultsStore.inMemory()
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    store[.count] = 2
    store.flush()
    try store.save()
    store.refresh()
    #expect(store[.count] == 2)
    #expect(seen.values == [0, 2])
    withExtendedLifetime(token) {}
  }
}
