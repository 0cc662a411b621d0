/** The notes as they might arrive from elsewhere (a JSON body, a database): plain data, checked before use. */
export const notes: unknown = [
  {
    docId: "moon",
    title: "The Moon",
    body: "The Moon is about 384,000 km from the Earth. Its light takes a little over a second to reach us.",
    categories: "astronomy"
  },
  {
    docId: "mars",
    title: "Mars",
    body: "Mars, the red planet, has two small moons: Phobos and Deimos. A rover needs months to get there.",
    categories: "astronomy; planets"
  },
  {
    docId: "bread",
    title: "Sourdough",
    body: "Feed the starter the night before, then let the dough rise slowly in a cool kitchen.",
    categories: null
  }
]
