// The sandbox's single-page app: the HTML is an empty shell; this bundle fetches the story as
// JSON and builds the article into the DOM, as a React or Vue app would.
const root = document.getElementById('root');
root.textContent = 'Loading…';

function element(tag, text) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  return node;
}

fetch('/app/api/story.json', { headers: { Accept: 'application/json' } })
  .then((response) => {
    if (!response.ok) throw new Error('HTTP ' + response.status);
    return response.json();
  })
  .then((story) => {
    document.title = story.title + ' | Coast News';
    const article = element('article');
    article.append(element('h1', story.title));
    const byline = element('p', 'By ' + story.author);
    byline.className = 'byline';
    article.append(byline);
    for (const section of story.sections) {
      if (section.heading) article.append(element('h2', section.heading));
      for (const paragraph of section.paragraphs) article.append(element('p', paragraph));
    }
    const more = element('a', 'Read the static article');
    more.href = '/articles/tides';
    article.append(more);
    root.replaceChildren(article);
  })
  .catch((error) => {
    root.textContent = 'The story could not be loaded (' + error.message + ').';
  });
