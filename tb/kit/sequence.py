"""Sequences shared by every environment."""
from pyuvm import uvm_sequence


class ItemsSeq(uvm_sequence):
  """Sends a prepared list of sequence items, in order, to the sequencer it is started on."""
  def __init__(self, name, items):
    super().__init__(name)
    self.items = items

  async def body(self):
    for it in self.items:
      await self.start_item(it)
      await self.finish_item(it)
