# Restores what the riak 2.7.0 client needs from Python < 3.10 on Python 3.11:
# the collections ABC aliases and namedtuple's `verbose` argument. Import before riak.
import collections, collections.abc
for n in dir(collections.abc):
    if not n.startswith('_') and not hasattr(collections, n):
        setattr(collections, n, getattr(collections.abc, n))
_nt = collections.namedtuple
def namedtuple(*a, verbose=False, **k):
    return _nt(*a, **k)
collections.namedtuple = namedtuple
