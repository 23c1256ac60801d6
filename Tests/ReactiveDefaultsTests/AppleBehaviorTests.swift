import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct AppleBehaviorTests {
  /// A write by "another process" (reported the way key-value observing reports it) reaches the observer once.
  @Test func aForeignWriteReachesObserversOnce() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    storage.writeFromOutside(.integer(7), forKey: "count")
    #expect(await seen.wait { $0 == [0, 7] })
    storage.writeFromOutside(.integer(7), forKey: "count")
    store[.count] = 8
    // The re-read of the second report may be delivering right now: then it delivers 8 too, just after.
    #expect(await seen.wait { $0.last == 8 })
    #expect(seen.values == [0, 7, 8], "\(seen.values)")
    withExtendedLifetime(token) {}
  }

  /// Apple posts `didChangeNotification` inside the library's own write: the write is delivered once, and the
  /// notification schedules no refresh (the hub recognises its own write); a plain write's in this process does.
  @Test func ourOwnWriteSchedulesNoRefresh() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    for value in 1...5 { store[.count] = value }
    #expect(seen.values == [0, 1, 2, 3, 4, 5])
    #expect(store.hub.externalRefreshCount.load(ordering: .relaxed) == 0)
    storage.writeInProcess(.integer(6), forKey: "count")
    #expect(store.hub.externalRefreshCount.load(ordering: .relaxed) == 1)
    #expect(await seen.wait { $0.last == 6 })
    withExtendedLifetime(token) {}
  }
}
